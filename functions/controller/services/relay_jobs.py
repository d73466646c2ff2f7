"""Relay jobs as the relay routes ask for them (seed 000 §III-B): S3 → EFS cache by a Step
Functions job, then ranged reads.

A relay job is keyed by the cache entry and the version the path holds: requests for it while it
runs, or while its copy is in the cache, find the same execution; after a failure or an eviction
the next request runs a new attempt under a new execution name (hycloud_core.jobs.ledger).

A coded file's job runs at the user's optimal instance (services/optimal_instance.py); the file it made whole is
then read from that instance's bucket, by the presigned `url` the ready state carries, instead of
through `/v1/relay/data`.
"""

from __future__ import annotations

from dataclasses import replace

from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import CONFIG, namespace, records, user

from hycloud_core import paths
from hycloud_core.errors import ConflictError
from hycloud_core.fs.relay_cache import RelayCache
from hycloud_core.instances import Instance
from hycloud_core.jobs import relay_job_key
from hycloud_core.jobs.ledger import JobLedger, JobRecord
from hycloud_core.jobs.specs import ByteRange, RelaySpec, Source
from hycloud_core.relay import byte_ranges, remote_relay_key

from . import optimal_instance
from .coded_files import relay_source
from .job_runs import RunOptions, describe, report, run


def _target(caller: APIGatewayRouter, path: str) -> tuple[str, str, int]:
    """(cache name, content hash, size) of a large file in the caller's namespace."""
    path = paths.normalize(path)
    link = namespace(caller).current_link(path)
    if link is None:
        raise ConflictError(f"{path} is not a large file; download it directly", code="not-a-large-file")
    return paths.cache_name(user(caller), path), link.content_hash, link.size


def _record(caller: APIGatewayRouter, key: str) -> JobRecord | None:
    return JobLedger(records().table, user(caller)).get(key)


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


def status_of(caller: APIGatewayRouter, path: str) -> dict:
    """The relay state of a large file of the caller's: ready, running (its job), or absent."""
    name, content_hash, size = _target(caller, path)
    info = {"path": paths.normalize(path), "size": size, "content_hash": content_hash}
    record = _record(caller, relay_job_key(name, content_hash))
    if record is not None and record.machine:
        return {**info, **_remote_state(record, content_hash)}
    job = _job_state(record)
    if RelayCache(CONFIG.cache_dir).is_ready(name, content_hash):
        return {**info, **({"job": job["job"]} if "job" in job else {}), "state": "ready"}
    return {**info, **job}


def _spec(
    caller: APIGatewayRouter, path: str, name: str, content_hash: str, size: int, at: Instance | None
) -> RelaySpec:
    """The relay job: at a data instance, the coded file rebuilt there and put in its bucket; at
    home, a coded file rebuilt from its blocks, any other copied whole or, when one function could
    not copy it in its time, by ranges (the workflow's Map)."""
    spec = RelaySpec(cache_name=name, content_hash=content_hash, size=size)
    link = namespace(caller).current_link(paths.normalize(path))
    if at is not None:
        source = optimal_instance.source(at, content_hash, link.erasure)
        return replace(spec, source=source, publish_key=remote_relay_key(content_hash))
    coded = Source.from_event(relay_source(link))
    if coded.coded or size <= CONFIG.relay_range_bytes:
        return replace(spec, source=coded)
    pieces = tuple(ByteRange.from_event(r) for r in byte_ranges(size, CONFIG.relay_range_bytes))
    return replace(spec, ranges=pieces, range_options={})


def start(caller: APIGatewayRouter, path: str) -> dict:
    """Start the relay job unless the file is ready; a running job is found, not started twice."""
    status = status_of(caller, path)
    if status["state"] == "ready":
        return status
    name, content_hash, size = _target(caller, path)
    key = relay_job_key(name, content_hash)
    at = optimal_instance.instance_for(caller, namespace(caller).current_link(paths.normalize(path)))
    where = at.relay_state_machine if at else None
    options = RunOptions(CONFIG.relay_state_machine, at=where, path=paths.normalize(path), size=size)
    job = run(caller, key, _spec(caller, path, name, content_hash, size, at), options)
    status = status_of(caller, path)
    if status["state"] == "ready":  # a finished attempt served the request
        return status
    info = {k: status[k] for k in ("path", "size", "content_hash")}
    where = {"instance": status["instance"]} if "instance" in status else {}
    place = {"queue": status["queue"]} if status.get("queue") else {}
    return {**info, "job": job, "state": "running", **where, **place}


def read(caller: APIGatewayRouter, path: str, offset: int, length: int) -> bytes:
    """`length` bytes from `offset` of the file's copy in the relay cache."""
    name, content_hash, _ = _target(caller, path)
    return RelayCache(CONFIG.cache_dir).read(name, content_hash, offset, length)
