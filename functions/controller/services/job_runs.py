"""Starting and reporting relay and delta jobs (Step Functions executions) for the caller.

A route hands `run` the job's key and spec and how to run it (`RunOptions`); control goes one
way, down: the job ledger (hycloud_core.jobs.ledger) says which attempt serves the job and
whether this request starts it, then this module writes what the request brought for the job
(`Staging`) and queues the attempt in the FOP queue (`job_queue`), where a bounded dispatch pass
starts it at once on an idle system. Whether a finished attempt's result is still there is
decided here, by the kind of job. A short job that needs nothing fetched first may instead run
`direct`: the controller invokes its function and waits (no workflow to start, schedule and
poll; not queued: it holds no relay worker), and keeps the outcome in staging as the job's
"execution" record.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache

import boto3
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from botocore.config import Config
from context import CONFIG, namespace, records, user

from hycloud_core import jobs
from hycloud_core.atomic import atomic_write
from hycloud_core.errors import NotFoundError
from hycloud_core.fs.relay_cache import RelayCache
from hycloud_core.instances import Instance
from hycloud_core.jobs import executions
from hycloud_core.jobs.ledger import JobLedger, JobRecord, submit
from hycloud_core.jobs.queue import USER, QueueEntry, QueueStore
from hycloud_core.jobs.specs import DeltaDownloadSpec, DeltaSpec, DeltaUploadSpec, JobSpec, RelaySpec
from hycloud_core.relay import remote_relay_key

from . import job_queue, optimal_instance


@dataclass(frozen=True)
class Staging:
    """What a request brought for its job (a checksum list, a delta), written where the job reads
    it just before a new attempt starts: at home the attempt's staging file `<job>.<suffix>`; at
    a data instance that instance's bucket under `key`, `data` put there or, when None, the
    home bucket's object `key` (staged by the client) copied there."""

    data: bytes | None = None
    suffix: str = ""
    at: Instance | None = None
    key: str = ""


@dataclass(frozen=True)
class RunOptions:
    """How a job runs. `machine` (the home workflow) runs it unless `at` names a data instance's,
    for which the spec is made; `direct` (a function name) runs it in this request instead.
    `path` (the file it works on) keeps related jobs in request order; `size` (the bytes it
    moves) gives its estimated transfer time and `priority` its class, hence its queue place."""

    machine: str
    at: str | None = None
    path: str | None = None
    size: int = 0
    direct: str | None = None
    priority: str = USER
    staging: Staging | None = None


@cache
def _lambda():
    return boto3.client("lambda", config=Config(read_timeout=30, retries={"max_attempts": 1}))


def invoke_now(function: str, spec: JobSpec) -> None:
    """Run the job attempt `spec` names in its function now and record how it ended, as an
    execution would."""
    answer = _lambda().invoke(FunctionName=function, Payload=json.dumps(spec.to_event()).encode())
    output = answer["Payload"].read().decode()
    outcome = {"status": "SUCCEEDED", "output": output}
    if "FunctionError" in answer:
        outcome = {"status": "FAILED", "error": (json.loads(output or "{}") or {}).get("errorType")}
    jobs.save_outcome(CONFIG.staging_dir, spec.job_name, outcome)
    if outcome["status"] == "SUCCEEDED":
        settle_later(function, json.loads(output or "{}"))


def settle_later(function: str, result: dict) -> None:
    """Start the settle job a delta upload's result asks for (its version to S3), not waited for:
    the upload is acknowledged with its version on EFS. Lambda retries a failed run twice."""
    if isinstance(result, dict) and isinstance(result.get("settle"), dict):
        _lambda().invoke(FunctionName=function, InvocationType="Event", Payload=json.dumps(result["settle"]))


def describe(machine: str, name: str) -> dict | None:
    """The execution (or a direct run's outcome); for a job still waiting its place in the queue
    (status QUEUED); None when none of these."""
    outcome = jobs.load_outcome(CONFIG.staging_dir, name)
    if outcome is not None:
        return outcome
    found = executions.describe(machine, name)
    if found is not None:
        return found
    place = job_queue.waiting(name)
    return {"status": "QUEUED", "queue": place} if place is not None else None


def run(router: APIGatewayRouter, key: str, spec: JobSpec, options: RunOptions) -> str:
    """The execution serving job `key` (told `spec`) for the caller, started when none serves;
    with `options.direct` the job has run before this returns."""
    attempt = submit(
        JobLedger(records().table, user(router)),
        key,
        lambda record: _status(router, spec, record, options.machine),
        options.at,
    )
    if attempt.start:
        _launch(router, spec.named(attempt.execution), options)
    return attempt.execution


def _status(router: APIGatewayRouter, spec: JobSpec, record: JobRecord, machine: str) -> str:
    """What the ledger is told of an attempt: its execution's status (a queued one is RUNNING),
    or GONE for a fresh success whose result is no longer there."""
    outcome = jobs.load_outcome(CONFIG.staging_dir, record.execution)
    if outcome is not None:
        state = outcome["status"]
    else:
        state = executions.status(record.machine or machine, record.execution)
        if state == "ABSENT" and QueueStore(records().table).job(record.execution):
            state = "RUNNING"  # waiting in the queue
    if state == "SUCCEEDED" and record.fresh and not _result_alive(router, spec, record):
        return "GONE"
    return state


def _result_alive(router: APIGatewayRouter, spec: JobSpec, record: JobRecord) -> bool:
    """Whether a succeeded attempt's result is still there: an upload's new version at its path;
    a delta in home staging or in the bucket of the data instance it ran at; a relayed file in the
    home cache or that instance's bucket (not when the instance left the ring)."""
    if isinstance(spec, DeltaUploadSpec):
        link = namespace(router).current_link(spec.path)
        return link is not None and link.content_hash == spec.content_hash
    at = optimal_instance.instance_of(record.machine) if record.machine else None
    if isinstance(spec, DeltaDownloadSpec):
        if record.machine:
            return at is not None and optimal_instance.holds(at, jobs.delta_object_key(record.execution))
        return os.path.exists(jobs.staging_file(CONFIG.staging_dir, record.execution, "delta"))
    if isinstance(spec, RelaySpec) and spec.content_hash:
        if at is not None:
            return optimal_instance.holds(at, remote_relay_key(spec.content_hash))
        return RelayCache(CONFIG.cache_dir).is_ready(spec.cache_name, spec.content_hash)
    return False


def _launch(router: APIGatewayRouter, spec: JobSpec, options: RunOptions) -> None:
    """Start the attempt `spec` names (idempotent: a concurrent request may start the same one):
    its staging written, then run direct or queued."""
    if options.staging is not None:
        _stage(options.staging, spec.job_name)
    if options.direct and not options.at:
        invoke_now(options.direct, spec)
        return
    caller, store = user(router), QueueStore(records().table)
    config = store.config(job_queue.SCHED)
    serving = executions.region_of(options.at) if options.at else None  # the data instance it runs at
    spb = job_queue.seconds_per_byte(caller, config, serving or job_queue.INSTANCE) if options.size else 0.0
    path = options.path or (spec.path if isinstance(spec, DeltaUploadSpec) else None)  # an upload's file
    entry = QueueEntry(
        job=spec.job_name,
        machine=options.at or options.machine,
        input=json.dumps(spec.to_event()),
        user=caller,
        paths=(path,) if path else (),
        size=options.size,
        seconds_per_byte=spb,
        priority=options.priority,
    )
    store.enqueue(entry, config)
    job_queue.pump(config)


def _stage(staging: Staging, job: str) -> None:
    if staging.at is None:
        os.makedirs(CONFIG.staging_dir, exist_ok=True)
        atomic_write(jobs.staging_file(CONFIG.staging_dir, job, staging.suffix), staging.data or b"")
    elif staging.data is None:
        optimal_instance.copy(staging.at, staging.key)
    else:
        optimal_instance.put(staging.at, staging.key, staging.data)


def delta_bytes(spec: DeltaSpec, size: int) -> int:
    """What a delta job reads: the version it encodes or applies, and its base unless cached."""
    return size * (2 if spec.base_hash and not spec.base_cached else 1)


def owned(router: APIGatewayRouter, job: str) -> str:
    """The job id if it names an attempt at one of the caller's jobs, else 404 (same for all others)."""
    record = JobLedger(records().table, user(router)).get(jobs.key_of(job))
    if record is None or int(job.rsplit("-", 1)[1]) > record.attempt:
        raise NotFoundError("no such job", code="no-such-job")
    return job


def report(desc: dict | None) -> dict:
    """What the caller sees of an execution: its state, its output when done, a short error when not."""
    if desc is not None and desc["status"] == "QUEUED":
        return {"state": "running", "queue": desc["queue"]}  # waiting for a worker: its place
    if desc is None or desc["status"] == "RUNNING":
        return {"state": "running"}  # absent: its launch is on its way
    if desc["status"] == "SUCCEEDED":
        return {"state": "ready", "result": json.loads(desc.get("output") or "{}")}
    return {"state": "failed", "error": jobs.failure(desc.get("error"))}
