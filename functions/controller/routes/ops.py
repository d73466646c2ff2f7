"""Move and copy of files and whole directories (large trees as jobs: services/tree_ops.py)."""

from __future__ import annotations

from typing import Annotated

from answers import TREE_JOB_ACCEPTED, Entry, ok, replies
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import filesystem
from models import PathPair
from preconditions import IfMatch, IfNoneMatch, expected_version
from services import tree_ops

router = APIGatewayRouter()


@router.post("/v1/move", responses={**replies(200, Entry, 404, 409), **TREE_JOB_ACCEPTED})
def move(body: Annotated[PathPair, Body()], if_match: IfMatch = None, if_none_match: IfNoneMatch = None):
    """`If-Match`/`If-None-Match` name the version `dst` must hold."""
    return _move_or_copy("move", body, if_match, if_none_match, 200)


@router.post("/v1/copy", responses={**replies(201, Entry, 404, 409), **TREE_JOB_ACCEPTED})
def copy(body: Annotated[PathPair, Body()], if_match: IfMatch = None, if_none_match: IfNoneMatch = None):
    """`If-Match`/`If-None-Match` name the version `dst` must hold."""
    return _move_or_copy("copy", body, if_match, if_none_match, 201)


def _move_or_copy(op: str, body: PathPair, if_match: str | None, if_none_match: str | None, done: int):
    """A large tree goes to a tree job (202, to follow); anything else is moved or copied at once."""
    fs, expect = filesystem(router), expected_version(if_match, if_none_match)
    job = tree_ops.submit(fs, op, body.src, body.dst, expect)
    if job is not None:
        return ok(tree_ops.answer(job), 202)
    act = fs.move if op == "move" else fs.copy
    return ok(act(body.src, body.dst, expect=expect).to_dict(), done)
