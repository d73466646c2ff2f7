"""Move and copy of files and whole directories."""

from __future__ import annotations

from typing import Annotated

from answers import Entry, replies
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import expected_version, filesystem, ok
from models import PathPair

router = APIGatewayRouter()


@router.post("/v1/move", responses=replies(200, Entry, 404, 409))
def move(body: Annotated[PathPair, Body()]):
    return ok(filesystem(router).move(body.src, body.dst, expect=expected_version(router)).to_dict())


@router.post("/v1/copy", responses=replies(201, Entry, 404, 409))
def copy(body: Annotated[PathPair, Body()]):
    return ok(filesystem(router).copy(body.src, body.dst, expect=expected_version(router)).to_dict(), 201)
