"""Large-file uploads: start (or resume), more part URLs, commit, abort (see hycloud_core.fs.uploads)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import expected_version, filesystem, json_body, ok, query

from hycloud_core.errors import BadRequestError

router = APIGatewayRouter()


@router.post("/v1/uploads")
def start() -> Response:
    body = json_body(router, size=int, content_hash=str, part_digests=list)
    return ok(filesystem(router).uploads.start(body["size"], body["content_hash"], body["part_digests"]))


@router.post("/v1/uploads/urls")
def urls() -> Response:
    body = json_body(router, content_hash=str, parts=list)
    if len(body["parts"]) > 1000:
        raise BadRequestError("at most 1000 parts per request", code="bad-parts")
    return ok({"urls": filesystem(router).uploads.urls(body["content_hash"], body["parts"])})


@router.post("/v1/uploads/commit")
def commit() -> Response:
    body = json_body(router, path=str, content_hash=str, proof=(str, type(None)), parents=(bool, type(None)))
    entry = filesystem(router).commit_large(
        body["path"],
        body["content_hash"],
        body.get("proof"),
        parents=bool(body.get("parents")),
        expect=expected_version(router),
    )
    return ok(entry.to_dict(), 201)


@router.delete("/v1/uploads")
def abort() -> Response:
    content_hash = query(router, "content_hash")
    filesystem(router).uploads.abort(content_hash)
    return ok({"aborted": content_hash})
