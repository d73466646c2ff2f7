"""Large-file uploads: start (or resume), more part URLs, commit, abort (see hycloud_core.fs.uploads)."""

from __future__ import annotations

from typing import Annotated

from answers import Aborted, Entry, PartUrls, UploadPlan, ok, replies
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import filesystem, user
from models import CommitUpload, ContentHash, StartUpload, UploadUrls, UserPath
from preconditions import IfMatch, IfNoneMatch, expected_version
from services import delta_jobs
from small_files import meter

router = APIGatewayRouter()


class StartUploadAt(StartUpload):
    """An upload's start may name where it will commit, so that what the commit would refuse
    there (a missing folder, the quota) is refused before any part is sent."""

    path: UserPath | None = None
    parents: bool | None = None


@router.post("/v1/uploads", responses=replies(200, UploadPlan, 403, 404, 409, 413))
def start(body: Annotated[StartUploadAt, Body()]):
    fs = filesystem(router)
    if body.path is not None:
        fs.check_upload(body.path, body.size, bool(body.parents))
    return ok(fs.uploads.start(body.size, body.content_hash, body.part_digests))


@router.post("/v1/uploads/urls", responses=replies(200, PartUrls, 404, 409))
def urls(body: Annotated[UploadUrls, Body()]):
    return ok({"urls": filesystem(router).uploads.urls(body.content_hash, body.parts)})


@router.post("/v1/uploads/commit", responses=replies(201, Entry, 404, 409))
def commit(
    body: Annotated[CommitUpload, Body()], if_match: IfMatch = None, if_none_match: IfNoneMatch = None
):
    entry = filesystem(router).commit_large(
        body.path,
        body.content_hash,
        body.proof,
        parents=bool(body.parents),
        expect=expected_version(if_match, if_none_match),
        mtime=body.mtime,
        mode=body.mode,
        sha256=body.sha256,
    )
    delta_jobs.precompute(router, body.path)
    meter(user(router), writes=[entry.size])
    return ok(entry.to_dict(), 201)


@router.delete("/v1/uploads", responses=replies(200, Aborted, 404, 409))
def abort(content_hash: Annotated[ContentHash, Query()]):
    filesystem(router).uploads.abort(content_hash)
    return ok({"aborted": content_hash})
