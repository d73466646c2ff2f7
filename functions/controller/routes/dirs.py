"""Directories: create, list (paginated), remove (a tree into the trash: hycloud_core.fs.trash)."""

from __future__ import annotations

from typing import Annotated

from answers import Entry, Listing, Removed, ok, replies
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import filesystem, namespace
from models import MakeDirectory, PageLimit, Text, UserPath

router = APIGatewayRouter()
MAX_PAGE = 1000


@router.post("/v1/dirs", responses=replies(201, Entry, 404, 409))
def mkdir(body: Annotated[MakeDirectory, Body()]):
    entry = filesystem(router).mkdir(body.path, parents=bool(body.parents))
    return ok(entry.to_dict(), 201)


@router.get("/v1/dirs", responses=replies(200, Listing, 404, 409))
def listdir(
    path: Annotated[UserPath, Query()] = "/",
    limit: Annotated[PageLimit, Query()] = MAX_PAGE,
    cursor: Annotated[Text, Query(description="from the previous page")] = "",
):
    entries, cursor = namespace(router).listdir(path, after=cursor or None, limit=limit)
    return ok({"entries": [e.to_dict() for e in entries], "cursor": cursor})


@router.delete("/v1/dirs", responses=replies(200, Removed, 404, 409))
def rmdir(path: Annotated[UserPath, Query()], recursive: Annotated[bool, Query()] = False):
    """An empty folder goes; with `recursive`, the folder and all it holds move into the trash in
    one step, whatever its size (GET /v1/trash), and `trash` names the item."""
    fs = filesystem(router)
    if not recursive:
        return ok({"removed": path, "files": fs.rmdir(path)})
    item = fs.trash_tree(path)
    return ok({"removed": item.path, "files": item.files, "trash": item.to_dict()})
