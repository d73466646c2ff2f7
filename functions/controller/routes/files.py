"""Small files: upload to and download from the user's namespace on EFS."""

from __future__ import annotations

import hashlib

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import CONFIG, check_sha256, flag, namespace, query, raw_body, records, user
from hycloud_core import paths
from hycloud_core.errors import PayloadTooLargeError

router = APIGatewayRouter()


@router.put("/v1/files")
def upload() -> Response:
    path = paths.normalize(query(router, "path"))
    data = raw_body(router)
    if len(data) > CONFIG.small_file_threshold:
        raise PayloadTooLargeError(
            f"{len(data)} bytes is above the small-file threshold of {CONFIG.small_file_threshold}; "
            "upload it as a large file",
            code="too-large-for-small-file",
        )
    digest = check_sha256(router, data)
    entry = namespace(router).write(path, data, parents=flag(router, "parents"))
    records().put_file(user(router), path, kind="small", size=len(data), sha256=digest)
    return Response(
        status_code=201, content_type="application/json", body={**entry.to_dict(), "sha256": digest}
    )


@router.get("/v1/files")
def download() -> Response:
    path = paths.normalize(query(router, "path"))
    data = namespace(router).read(path)
    return Response(
        status_code=200,
        content_type="application/octet-stream",
        body=data,
        headers={"x-hycloud-sha256": hashlib.sha256(data).hexdigest()},
    )
