"""Directories: create, list (paginated), remove."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import filesystem, flag, json_body, namespace, ok, query

from hycloud_core.errors import BadRequestError
from routes import tree_jobs

router = APIGatewayRouter()
MAX_PAGE = 1000


@router.post("/v1/dirs")
def mkdir() -> Response:
    body = json_body(router, path=str, parents=(bool, type(None)))
    entry = filesystem(router).mkdir(body["path"], parents=bool(body.get("parents")))
    return ok(entry.to_dict(), 201)


@router.get("/v1/dirs")
def listdir() -> Response:
    try:
        limit = int(query(router, "limit", str(MAX_PAGE)))
    except ValueError:
        raise BadRequestError("limit must be an integer", code="bad-parameter") from None
    if not 1 <= limit <= MAX_PAGE:
        raise BadRequestError(f"limit must be between 1 and {MAX_PAGE}", code="bad-parameter")
    entries, cursor = namespace(router).listdir(
        query(router, "path", "/"), after=query(router, "cursor", "") or None, limit=limit
    )
    return ok({"entries": [e.to_dict() for e in entries], "cursor": cursor})


@router.delete("/v1/dirs")
def rmdir() -> Response:
    path = query(router, "path")
    if flag(router, "recursive"):
        return tree_jobs.remove(router, path)
    return ok({"removed": path, "files": filesystem(router).rmdir(path)})
