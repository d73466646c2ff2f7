"""Relay download routes (seed 000 §III-B): start or find a relay job, its status, and ranged reads
of the cached copy; how jobs are keyed and where a coded file's runs: services/relay_jobs.py."""

from __future__ import annotations

from typing import Annotated

from answers import BYTES, RelayStatus, ok, replies
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from models import Length, Offset, RelayTarget, UserPath, Wait
from polling import long_poll
from services import relay_jobs

router = APIGatewayRouter()


@router.post("/v1/relay", responses=replies(200, RelayStatus, 404, 409))
def start(body: Annotated[RelayTarget, Body()]):
    """Start the relay job unless the file is ready; a running job is found, not started twice."""
    return ok(relay_jobs.start(router, body.path))


@router.get("/v1/relay", responses=replies(200, RelayStatus, 404, 409))
def status(path: Annotated[UserPath, Query()], wait: Annotated[Wait, Query()] = 0):
    """The relay state of a file; with `wait`, held until the job ends (long poll)."""
    return ok(long_poll(lambda: relay_jobs.status_of(router, path), wait, lambda s: s["state"] == "running"))


@router.get("/v1/relay/data", responses=replies(200, None, 404, 409, content=BYTES))
def data(
    path: Annotated[UserPath, Query()], offset: Annotated[Offset, Query()], length: Annotated[Length, Query()]
):
    piece = relay_jobs.read(router, path, offset, length)
    return Response(
        status_code=200,
        content_type="application/octet-stream",
        body=piece,
    )
