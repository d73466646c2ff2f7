"""Move and copy of files and whole directories (large trees as jobs: tree_jobs.py)."""

from __future__ import annotations

from typing import Annotated

from answers import Entry, replies
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import IfMatch, IfNoneMatch, expected_version
from models import PathPair

from routes import tree_jobs

router = APIGatewayRouter()


@router.post("/v1/move", responses={**replies(200, Entry, 404, 409), **tree_jobs.ACCEPTED})
def move(body: Annotated[PathPair, Body()], if_match: IfMatch = None, if_none_match: IfNoneMatch = None):
    """`If-Match`/`If-None-Match` name the version `dst` must hold."""
    return tree_jobs.move(router, body.src, body.dst, expected_version(if_match, if_none_match))


@router.post("/v1/copy", responses={**replies(201, Entry, 404, 409), **tree_jobs.ACCEPTED})
def copy(body: Annotated[PathPair, Body()], if_match: IfMatch = None, if_none_match: IfNoneMatch = None):
    """`If-Match`/`If-None-Match` name the version `dst` must hold."""
    return tree_jobs.copy(router, body.src, body.dst, expected_version(if_match, if_none_match))
