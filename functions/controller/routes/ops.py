"""Move and copy of files and whole directories (large trees as jobs: tree_jobs.py)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import expected_version, json_body

from routes import tree_jobs

router = APIGatewayRouter()


@router.post("/v1/move")
def move() -> Response:
    body = json_body(router, src=str, dst=str)
    return tree_jobs.move(router, body["src"], body["dst"], expected_version(router))


@router.post("/v1/copy")
def copy() -> Response:
    body = json_body(router, src=str, dst=str)
    return tree_jobs.copy(router, body["src"], body["dst"], expected_version(router))
