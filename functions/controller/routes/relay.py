"""Relay download (seed 000 §III-B): S3 → EFS cache by a Step Functions job, then ranged reads.

A relay job is keyed by the cache entry and the version the path holds: requests for it while it
runs, or while its copy is in the cache, find the same execution; after a failure or an eviction
the next request runs a new attempt under a new execution name (hycloud_core.job_ledger).
"""

from __future__ import annotations

from typing import Annotated

from answers import BYTES, RelayStatus, replies
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import CONFIG, long_poll, namespace, ok, records, user
from models import Length, Offset, RelayTarget, UserPath, Wait

from hycloud_core import paths
from hycloud_core.errors import ConflictError
from hycloud_core.fs.relay_cache import RelayCache
from hycloud_core.job_ledger import JobLedger
from hycloud_core.relay import byte_ranges, relay_job_key

from .coded import relay_source
from .job_runner import describe, report, run

router = APIGatewayRouter()


def _target(path: str) -> tuple[str, str, int]:
    """(cache name, content hash, size) of a large file in the caller's namespace."""
    path = paths.normalize(path)
    link = namespace(router).current_link(path)
    if link is None:
        raise ConflictError(f"{path} is not a large file; download it directly", code="not-a-large-file")
    return paths.cache_name(user(router), path), link.content_hash, link.size


def _job_state(key: str) -> dict:
    """The state of the relay job's current attempt (absent when none ran)."""
    record = JobLedger(records().table, user(router)).get(key)
    if record is None:
        return {"state": "absent"}
    state = report(describe(CONFIG.relay_state_machine, record.execution))
    state.pop("result", None)
    if state["state"] == "ready":  # finished, then evicted before the client read it
        state = {"state": "absent"}
    return {"job": record.execution, **state}


def _status(path: str) -> dict:
    name, content_hash, size = _target(path)
    info = {"path": paths.normalize(path), "size": size, "content_hash": content_hash}
    job = _job_state(relay_job_key(name, content_hash))
    if RelayCache(CONFIG.cache_dir).is_ready(name, content_hash):
        return {**info, **({"job": job["job"]} if "job" in job else {}), "state": "ready"}
    return {**info, **job}


def _source(path: str, size: int) -> dict:
    """A coded file is rebuilt from its blocks; any other large file is copied whole or by ranges."""
    return relay_source(namespace(router).current_link(paths.normalize(path))) or _ranges(size)


def _ranges(size: int) -> dict:
    """Ranges for the workflow's Map when one function could not copy the whole file in its time."""
    if size <= CONFIG.relay_range_bytes:
        return {}
    return {"ranges": byte_ranges(size, CONFIG.relay_range_bytes), "range_options": {}}


@router.post("/v1/relay", responses=replies(200, RelayStatus, 404, 409))
def start(body: Annotated[RelayTarget, Body()]):
    """Start the relay job unless the file is cached; a running job is found, not started twice."""
    path = body.path
    status = _status(path)
    if status["state"] == "ready":
        return ok(status)
    name, content_hash, size = _target(path)
    cache = RelayCache(CONFIG.cache_dir)
    job = run(
        router,
        CONFIG.relay_state_machine,
        relay_job_key(name, content_hash),
        {"cache_name": name, "content_hash": content_hash, "size": size, **_source(path, size)},
        lambda _: cache.is_ready(name, content_hash),
        lambda _: None,
        path=paths.normalize(path),
        size=size,
    )
    info = {k: status[k] for k in ("path", "size", "content_hash")}
    place = _job_state(relay_job_key(name, content_hash)).get("queue")
    return ok({**info, "job": job, "state": "running", **({"queue": place} if place else {})})


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
