"""Starting and reporting relay and delta jobs (Step Functions executions) for the caller.

Which execution serves a job is decided by the job ledger (hycloud_core.job_ledger); when it
runs is decided by the FOP queue (hycloud_core.store.queue_records, docs/SCHEDULING.md): a new
attempt is queued and a dispatch pass runs at once, so on an idle system it starts in this
request. This module adds the Step Functions calls and turns an execution (or its place in the
queue) into what the caller may see.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable

from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import records, sfn, user

from hycloud_core import jobs
from hycloud_core.control.dispatch import dispatch_pass
from hycloud_core.errors import NotFoundError
from hycloud_core.job_ledger import JobLedger, submit
from hycloud_core.relay import execution_arn
from hycloud_core.store.measurements import Measurements
from hycloud_core.store.queue_records import QueueStore, SchedConfig

SCHED = SchedConfig.from_environment()
INSTANCE = os.environ.get("AWS_REGION", "home")
PUMP_EVERY_S = 0.5  # a waiting client's polls run a dispatch pass at most this often
_last_pump = [0.0]


def _status(machine: str, name: str) -> str:
    try:
        return sfn().describe_execution(executionArn=execution_arn(machine, name))["status"]
    except sfn().exceptions.ExecutionDoesNotExist:
        return "ABSENT"


def _start(machine: str, name: str, payload: str) -> None:
    try:
        sfn().start_execution(stateMachineArn=machine, name=name, input=payload)
    except sfn().exceptions.ExecutionAlreadyExists:
        pass  # a concurrent pass started this very attempt


def pump(config: SchedConfig | None = None) -> None:
    """One dispatch pass: starts what fits, in FOP order. Given the `config` just read (a job was
    queued), it skips looking for ended jobs: their end events free their workers."""
    _last_pump[0] = time.monotonic()
    store = QueueStore(records().table)
    if config is None:
        dispatch_pass(store, _start, _status, INSTANCE, SCHED)
    else:
        dispatch_pass(store, _start, None, INSTANCE, config, merged=True)


def describe(machine: str, name: str) -> dict | None:
    """The execution; for a job still waiting its place in the queue (status QUEUED); None when neither."""
    try:
        return sfn().describe_execution(executionArn=execution_arn(machine, name))
    except sfn().exceptions.ExecutionDoesNotExist:
        pass
    store = QueueStore(records().table)
    place = store.position(name)
    if place is not None and time.monotonic() - _last_pump[0] >= PUMP_EVERY_S:
        pump()
        place = store.position(name)
    return {"status": "QUEUED", "queue": place} if place is not None else None


def _seconds_per_byte(user_id: str, config: SchedConfig) -> float:
    """The user's measured download rate (eq. 4) or the deployment's default."""
    rate = Measurements(records().table, user_id).view([INSTANCE])["estimates"].get(INSTANCE)
    return 1.0 / (rate or config.default_bps)


def run(
    router: APIGatewayRouter,
    machine: str,
    key: str,
    payload: dict,
    result_alive: Callable[[str], bool],
    stage: Callable[[str], None],
    path: str | None = None,
    size: int = 0,
) -> str:
    """The execution serving job `key` for the caller, queued (with `payload`) when needed.

    `path` (the file the job works on) keeps related jobs in request order; `size` gives its
    estimated transfer time, hence its place in the queue.
    """
    store = QueueStore(records().table)
    path = path or payload.get("path")  # a delta upload names its file

    def status(name: str) -> str:
        state = _status(machine, name)
        return "RUNNING" if state == "ABSENT" and store.job(name) else state  # queued counts as running

    def launch(name: str) -> None:
        stage(name)
        caller = user(router)
        config = store.config(SCHED)
        spb = _seconds_per_byte(caller, config) if size else 0.0
        body = json.dumps({"job": name, **payload})
        store.enqueue(name, machine, body, caller, (path,) if path else (), size, spb, config)
        pump(config)

    return submit(JobLedger(records().table, user(router)), key, status, result_alive, launch)


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
