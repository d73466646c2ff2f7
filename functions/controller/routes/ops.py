"""Move and copy of files and whole directories."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import expected_version, filesystem, json_body, ok

router = APIGatewayRouter()


@router.post("/v1/move")
def move() -> Response:
    body = json_body(router, src=str, dst=str)
    return ok(filesystem(router).move(body["src"], body["dst"], expect=expected_version(router)).to_dict())


@router.post("/v1/copy")
def copy() -> Response:
    body = json_body(router, src=str, dst=str)
    return ok(
        filesystem(router).copy(body["src"], body["dst"], expect=expected_version(router)).to_dict(), 201
    )
