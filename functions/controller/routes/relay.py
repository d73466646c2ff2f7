"""Relay download (seed 000 §III-B): S3 → EFS cache by a Step Functions job, then ranged reads.

A relay job is keyed by the cache entry and the version the path holds: requests for it while it
runs, or while its copy is in the cache, find the same execution; after a failure or an eviction
the next request runs a new attempt under a new execution name (hycloud_core.jobs.ledger).

A coded file's job runs at the user's optimal instance (services/optimal_instance.py); the file it made whole is
then read from that instance's bucket, by the presigned `url` the ready state carries, instead of
through `/v1/relay/data`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from answers import BYTES, RelayStatus, ok, replies
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import CONFIG, namespace, records, user
from models import Length, Offset, RelayTarget, UserPath, Wait
from polling import long_poll
from services import optimal_instance
from services.coded_files import relay_source
from services.job_runs import RunOptions, describe, report, run

from hycloud_core import paths
from hycloud_core.errors import ConflictError
from hycloud_core.fs.relay_cache import RelayCache
from hycloud_core.instances import Instance
from hycloud_core.jobs import relay_job_key
from hycloud_core.jobs.ledger import JobLedger, JobRecord
from hycloud_core.jobs.specs import ByteRange, RelaySpec, Source
from hycloud_core.relay import byte_ranges, remote_relay_key

router = APIGatewayRouter()


def _target(path: str) -> tuple[str, str, int]:
    """(cache name, content hash, size) of a large file in the caller's namespace."""
    path = paths.normalize(path)
    link = namespace(router).current_link(path)
    if link is None:
        raise ConflictError(f"{path} is not a large file; download it directly", code="not-a-large-file")
    return paths.cache_name(user(router), path), link.content_hash, link.size


def _record(key: str) -> JobRecord | None:
    return JobLedger(records().table, user(router)).get(key)


def _job_state(record: JobRecord | None) -> dict:
    """The state of the relay job's current attempt (absent when none ran)."""
    if record is None:
        return {"state": "absent"}
    state = report(describe(record.machine or CONFIG.relay_state_machine, record.execution))
    state.pop("result", None)
    if state["state"] == "ready":  # finished, then evicted before the client read it
        state = {"state": "absent"}
    return {"job": record.execution, **state}


def _remote_state(record: JobRecord, content_hash: str) -> dict:
    """A job at a data instance: ready once its file is in that instance's bucket, with its URL."""
    at = optimal_instance.instance_of(record.machine or "")
    state = report(describe(record.machine or "", record.execution))
    state.pop("result", None)
    key = remote_relay_key(content_hash)
    if state["state"] == "ready":
        if at is None or not optimal_instance.holds(at, key):
            return {"state": "absent"}  # expired since, or the instance left the ring
        state["url"] = optimal_instance.url(at, key)
    return {"job": record.execution, **state, **({"instance": at.region} if at else {})}


def _status(path: str) -> dict:
    name, content_hash, size = _target(path)
    info = {"path": paths.normalize(path), "size": size, "content_hash": content_hash}
    record = _record(relay_job_key(name, content_hash))
    if record is not None and record.machine:
        return {**info, **_remote_state(record, content_hash)}
    job = _job_state(record)
    if RelayCache(CONFIG.cache_dir).is_ready(name, content_hash):
        return {**info, **({"job": job["job"]} if "job" in job else {}), "state": "ready"}
    return {**info, **job}


def _spec(path: str, name: str, content_hash: str, size: int, at: Instance | None) -> RelaySpec:
    """The relay job: at a data instance, the coded file rebuilt there and put in its bucket; at
    home, a coded file rebuilt from its blocks, any other copied whole or, when one function could
    not copy it in its time, by ranges (the workflow's Map)."""
    spec = RelaySpec(cache_name=name, content_hash=content_hash, size=size)
    link = namespace(router).current_link(paths.normalize(path))
    if at is not None:
        source = optimal_instance.source(at, content_hash, link.erasure)
        return replace(spec, source=source, publish_key=remote_relay_key(content_hash))
    coded = Source.from_event(relay_source(link))
    if coded.coded or size <= CONFIG.relay_range_bytes:
        return replace(spec, source=coded)
    pieces = tuple(ByteRange.from_event(r) for r in byte_ranges(size, CONFIG.relay_range_bytes))
    return replace(spec, ranges=pieces, range_options={})


@router.post("/v1/relay", responses=replies(200, RelayStatus, 404, 409))
def start(body: Annotated[RelayTarget, Body()]):
    """Start the relay job unless the file is ready; a running job is found, not started twice."""
    path = body.path
    status = _status(path)
    if status["state"] == "ready":
        return ok(status)
    name, content_hash, size = _target(path)
    key = relay_job_key(name, content_hash)
    at = optimal_instance.instance_for(router, namespace(router).current_link(paths.normalize(path)))
    where = at.relay_state_machine if at else None
    options = RunOptions(CONFIG.relay_state_machine, at=where, path=paths.normalize(path), size=size)
    job = run(router, key, _spec(path, name, content_hash, size, at), options)
    status = _status(path)
    if status["state"] == "ready":  # a finished attempt served the request
        return ok(status)
    info = {k: status[k] for k in ("path", "size", "content_hash")}
    where = {"instance": status["instance"]} if "instance" in status else {}
    place = {"queue": status["queue"]} if status.get("queue") else {}
    return ok({**info, "job": job, "state": "running", **where, **place})


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
