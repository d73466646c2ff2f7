"""Directories: create, list (paginated), remove."""

from __future__ import annotations

from typing import Annotated

from answers import TREE_JOB_ACCEPTED, Entry, Listing, Removed, ok, replies
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import filesystem, namespace
from models import MakeDirectory, PageLimit, Text, UserPath
from services import tree_ops

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


@router.delete("/v1/dirs", responses={**replies(200, Removed, 404, 409), **TREE_JOB_ACCEPTED})
def rmdir(path: Annotated[UserPath, Query()], recursive: Annotated[bool, Query()] = False):
    fs = filesystem(router)
    job = tree_ops.submit(fs, "remove", path, None, None) if recursive else None
    if job is not None:
        return ok(tree_ops.answer(job), 202)
    return ok({"removed": path, "files": fs.rmdir(path, recursive=recursive)})
