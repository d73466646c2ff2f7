"""Relay download (seed 000 §III-B): S3 → EFS cache by a Step Functions job, then ranged reads.

Starting a job is idempotent: the execution is named after the cache entry and the content hash,
so the same request twice finds the job already running instead of starting a second one.
"""

from __future__ import annotations

import json
from typing import Annotated

from answers import BYTES, RelayStatus, replies
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import CONFIG, long_poll, namespace, ok, sfn, user
from models import Length, Offset, RelayTarget, UserPath, Wait

from hycloud_core import paths
from hycloud_core.errors import ConflictError
from hycloud_core.fs.relay_cache import RelayCache
from hycloud_core.relay import execution_arn, execution_name

router = APIGatewayRouter()


def _target(path: str) -> tuple[str, str, int]:
    """(cache name, content hash, size) of a large file in the caller's namespace."""
    path = paths.normalize(path)
    link = namespace(router).current_link(path)
    if link is None:
        raise ConflictError(f"{path} is not a large file; download it directly", code="not-a-large-file")
    return paths.cache_name(user(router), path), link.content_hash, link.size


def _job_state(name: str, content_hash: str) -> dict:
    try:
        desc = sfn().describe_execution(
            executionArn=execution_arn(CONFIG.relay_state_machine, execution_name(name, content_hash))
        )
    except sfn().exceptions.ExecutionDoesNotExist:
        return {"state": "absent"}
    state = {"RUNNING": "running", "SUCCEEDED": "ready"}.get(desc["status"], "failed")
    return {"state": state, **({"error": desc.get("error") or desc["status"]} if state == "failed" else {})}


def _status(path: str) -> dict:
    name, content_hash, size = _target(path)
    info = {"path": paths.normalize(path), "size": size, "content_hash": content_hash}
    if RelayCache(CONFIG.cache_dir).is_ready(name, content_hash):
        return {**info, "state": "ready"}
    job = _job_state(name, content_hash)
    if job["state"] == "ready":  # finished, then evicted before the client read it
        job = {"state": "absent"}
    return {**info, **job}


@router.post("/v1/relay", responses=replies(200, RelayStatus, 404, 409))
def start(body: Annotated[RelayTarget, Body()]):
    path = body.path
    status = _status(path)
    if status["state"] in ("ready", "running"):
        return ok(status)
    name, content_hash, size = _target(path)
    job = {"cache_name": name, "content_hash": content_hash, "size": size}
    try:
        sfn().start_execution(
            stateMachineArn=CONFIG.relay_state_machine,
            input=json.dumps(job),
            name=execution_name(name, content_hash, retry=status["state"] != "absent"),
        )
    except sfn().exceptions.ExecutionAlreadyExists:
        pass
    return ok({**status, "state": "running"})


@router.get("/v1/relay", responses=replies(200, RelayStatus, 404, 409))
def status(path: Annotated[UserPath, Query()], wait: Annotated[Wait, Query()] = 0):
    """The relay state of a file; with `wait`, held until the job ends (long poll)."""
    return ok(long_poll(lambda: _status(path), wait, lambda s: s["state"] == "running"))


@router.get("/v1/relay/data", responses=replies(200, None, 404, 409, content=BYTES))
def data(
    path: Annotated[UserPath, Query()], offset: Annotated[Offset, Query()], length: Annotated[Length, Query()]
):
    name, content_hash, _ = _target(path)
    piece = RelayCache(CONFIG.cache_dir).read(name, content_hash, offset, length)
    return Response(
        status_code=200,
        content_type="application/octet-stream",
        body=piece,
    )
