"""Files: small-file upload and download on EFS; large files answer with where to fetch them."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated

from answers import BINARY_BODY, BYTES, LINK_TYPE, Deleted, DownloadLink, StoredFile, ok, replies
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Header, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from bodies import check_sha256, raw_body
from context import filesystem, namespace, user
from models import FileMode, FileTime, Text, UserPath
from preconditions import IfMatch, IfNoneMatch, expected_version
from small_files import accept_limit, meter

from hycloud_core import content, paths
from hycloud_core.errors import PayloadTooLargeError

router = APIGatewayRouter()
DOWNLOAD = {**BYTES, LINK_TYPE: {"model": DownloadLink}}


@router.put("/v1/files", responses=replies(201, StoredFile, 404, 409, 413), openapi_extensions=BINARY_BODY)
def upload(
    path: Annotated[UserPath, Query()],
    parents: Annotated[bool, Query()] = False,
    mtime: Annotated[FileTime | None, Query(description="modification time to keep (epoch seconds)")] = None,
    mode: Annotated[FileMode | None, Query(description="permission bits to keep (0-511)")] = None,
    sha256: Annotated[
        Text, Header(alias="x-hycloud-sha256", description="sha256 of the body; a mismatch is refused")
    ] = "",
    if_match: IfMatch = None,
    if_none_match: IfNoneMatch = None,
):
    path = paths.normalize(path)
    data = raw_body(router)
    limit = accept_limit(user(router))
    if len(data) > limit:
        raise PayloadTooLargeError(
            f"{len(data)} bytes is above the small-file threshold of {limit}; upload it as a large file",
            code="too-large-for-small-file",
        )
    digest = check_sha256(data, sha256)
    entry = filesystem(router).put_small(
        path,
        data,
        digest,
        parents=parents,
        expect=expected_version(if_match, if_none_match),
        mtime=mtime,
        mode=mode,
    )
    meter(user(router), writes=[len(data)])
    # content_hash: the file's version (If-Match), the same content address a large file has
    return ok({**entry.to_dict(), "sha256": digest, "content_hash": content.hash_bytes(data)}, 201)


@router.get("/v1/files", responses=replies(200, None, 404, 409, content=DOWNLOAD))
def download(path: Annotated[UserPath, Query()]):
    path = paths.normalize(path)
    ns = namespace(router)
    found = ns.stat(path)
    meter(user(router), reads=[found.size])
    if found.storage == "large":
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


@router.delete("/v1/files", responses=replies(200, Deleted, 404, 409))
def delete(path: Annotated[UserPath, Query()], if_match: IfMatch = None, if_none_match: IfNoneMatch = None):
    """The file moves into the trash (GET /v1/trash); `trash` names the item."""
    path = paths.normalize(path)
    item = filesystem(router).delete(path, expect=expected_version(if_match, if_none_match))
    return ok({"deleted": path, "trash": item.to_dict()})
