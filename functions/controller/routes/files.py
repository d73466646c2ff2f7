"""Files: small-file upload and download on EFS; large files answer with where to fetch them."""

from __future__ import annotations

import hashlib
import json

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import CONFIG, check_sha256, expected_version, filesystem, flag, namespace, ok, query, raw_body

from hycloud_core import paths
from hycloud_core.errors import PayloadTooLargeError

router = APIGatewayRouter()
LINK_TYPE = "application/vnd.hycloud.link+json"


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
    entry = filesystem(router).put_small(
        path, data, digest, parents=flag(router, "parents"), expect=expected_version(router)
    )
    return ok({**entry.to_dict(), "sha256": digest}, 201)


@router.get("/v1/files")
def download() -> Response:
    path = paths.normalize(query(router, "path"))
    ns = namespace(router)
    if ns.stat(path).storage == "large":
        return Response(
            status_code=200, content_type=LINK_TYPE, body=json.dumps(filesystem(router).download_link(path))
        )
    data = ns.read(path)
    return Response(
        status_code=200,
        content_type="application/octet-stream",
        body=data,
        headers={"x-hycloud-sha256": hashlib.sha256(data).hexdigest()},
    )


@router.delete("/v1/files")
def delete() -> Response:
    path = paths.normalize(query(router, "path"))
    filesystem(router).delete(path, expect=expected_version(router))
    return ok({"deleted": path})
