"""Starting and reporting relay and delta jobs (Step Functions executions) for the caller.

Which execution serves a job is decided by the job ledger (hycloud_core.jobs.ledger); when it
runs is decided by the FOP queue (hycloud_core.store.queue_records, docs/SCHEDULING.md): a new
attempt is queued and a bounded dispatch pass runs at once, so on an idle system it starts in
this request. This module adds the Step Functions calls and turns an execution (or its place in the
queue) into what the caller may see. A short job that needs nothing fetched first may instead
run `direct`: the controller invokes its function and waits (no workflow to start, schedule and
poll; not queued: it holds no relay worker), and keeps the outcome in staging as the job's
"execution" record.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from functools import cache

import boto3
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from botocore.config import Config
from context import CONFIG, records, user

from hycloud_core import jobs
from hycloud_core.control.fop import DIRECTORY_OP_SECONDS
from hycloud_core.control.limits import TooManyRequestsError
from hycloud_core.errors import NotFoundError
from hycloud_core.fs.tree_walk import PRE, under, walk
from hycloud_core.jobs import executions
from hycloud_core.jobs.ledger import JobLedger, JobRecord, submit
from hycloud_core.jobs.specs import DeltaSpec, DeltaUploadSpec, JobSpec, TreeJobSpec
from hycloud_core.launch.dispatch import PassBudget, dispatch_pass
from hycloud_core.store.locks import Lease
from hycloud_core.store.measurements import Measurements
from hycloud_core.store.queue_records import USER, QueueStore, SchedConfig
from hycloud_core.store.tree_jobs import RUNNING, STOPPED, TreeJobs

SCHED = SchedConfig.from_environment()
INSTANCE = os.environ.get("AWS_REGION", "home")
PUMP_EVERY_S = 0.5  # a waiting client's polls run a dispatch pass at most this often
SIZE_WALK_S = 2.0  # a tree copy's bytes are summed for this long, the rest extrapolated
_last_pump = [0.0]


# A request's pass is bounded so that it never waits on other users' work (issue 29): it looks
# at the head of the queue only and starts at most a couple of jobs within its time; the
# dispatcher function, run by every job's end, drains the rest (docs/SCHEDULING.md).
REQUEST_PASS = PassBudget(seconds=1.0, scan=8, starts=2)


def pump(config: SchedConfig | None = None) -> None:
    """One bounded dispatch pass: starts what fits, in FOP order. Given the `config` just read (a
    job was queued), it skips looking for ended jobs: their end events free their workers."""
    _last_pump[0] = time.monotonic()
    store = QueueStore(records().table)
    if config is None:
        dispatch_pass(store, executions.start, executions.status, INSTANCE, SCHED, budget=REQUEST_PASS)
    else:
        dispatch_pass(store, executions.start, None, INSTANCE, config, merged=True, budget=REQUEST_PASS)


@cache
def _lambda():
    return boto3.client("lambda", config=Config(read_timeout=30, retries={"max_attempts": 1}))


def invoke_now(function: str, spec: JobSpec) -> None:
    """Run the job attempt `spec` names in its function now and record how it ended, as an
    execution would."""
    name = spec.job_name
    answer = _lambda().invoke(FunctionName=function, Payload=json.dumps(spec.to_event()).encode())
    output = answer["Payload"].read().decode()
    outcome = {"status": "SUCCEEDED", "output": output}
    if "FunctionError" in answer:
        outcome = {"status": "FAILED", "error": (json.loads(output or "{}") or {}).get("errorType")}
    jobs.save_outcome(CONFIG.staging_dir, name, outcome)


def describe(machine: str, name: str) -> dict | None:
    """The execution (or a direct run's outcome); for a job still waiting its place in the queue
    (status QUEUED); None when none of these."""
    outcome = jobs.load_outcome(CONFIG.staging_dir, name)
    if outcome is not None:
        return outcome
    found = executions.describe(machine, name)
    if found is not None:
        return found
    store = QueueStore(records().table)
    place = store.position(name)
    if place is not None and time.monotonic() - _last_pump[0] >= PUMP_EVERY_S:
        pump()
        place = store.position(name)
    return {"status": "QUEUED", "queue": place} if place is not None else None


def _seconds_per_byte(user_id: str, config: SchedConfig, instance: str = INSTANCE) -> float:
    """The user's measured download rate from the instance the job runs at (eq. 4), or the
    deployment's default."""
    rate = Measurements(records().table, user_id).view([instance])["estimates"].get(instance)
    return 1.0 / (rate or config.default_bps)


def run(
    router: APIGatewayRouter,
    machine: str,
    key: str,
    spec: JobSpec,
    result_alive: Callable[[str], bool],
    stage: Callable[[str], None],
    path: str | None = None,
    size: int = 0,
    direct: str | None = None,
    priority: str = USER,
    at: str | None = None,
) -> str:
    """The execution serving job `key` for the caller, queued (told `spec`) when needed; with
    `direct` (a function name) the job runs in that function before this returns.

    `machine` runs the job unless `at` names another (a data instance's state machine, for which
    `spec` is made); an attempt is looked up on the machine it was launched on.
    `path` (the file the job works on) keeps related jobs in request order; `size` (the bytes it
    moves) gives its estimated transfer time and `priority` its class, hence its place in the queue.
    """
    store = QueueStore(records().table)
    path = path or (spec.path if isinstance(spec, DeltaUploadSpec) else None)  # an upload names its file

    def status(record: JobRecord) -> str:
        outcome = jobs.load_outcome(CONFIG.staging_dir, record.execution)
        if outcome is not None:
            return outcome["status"]
        state = executions.status(record.machine or machine, record.execution)
        return "RUNNING" if state == "ABSENT" and store.job(record.execution) else state  # queued: running

    def launch(record: JobRecord) -> None:
        name = record.execution
        stage(name)
        if direct and not at:
            invoke_now(direct, spec.named(name))
            return
        caller = user(router)
        config = store.config(SCHED)
        serving = executions.region_of(at) if at else None  # the data instance it runs at
        spb = _seconds_per_byte(caller, config, serving or INSTANCE) if size else 0.0
        body = json.dumps(spec.named(name).to_event())
        store.enqueue(
            name, at or machine, body, caller, (path,) if path else (), size, spb, config, priority=priority
        )
        pump(config)

    ledger = JobLedger(records().table, user(router))
    return submit(ledger, key, status, result_alive, launch, at).execution


def delta_bytes(spec: DeltaSpec, size: int) -> int:
    """What a delta job reads: the version it encodes or applies, and its base unless cached."""
    return size * (2 if spec.base_hash and not spec.base_cached else 1)


def copied_bytes(ns, root: str, files: int) -> int:
    """The bytes a tree copy writes: its small files' (a large file's copy is a new link to the
    same object). Summed for SIZE_WALK_S at most and extrapolated over `files`."""
    deadline, seen, total = time.monotonic() + SIZE_WALK_S, 0, 0
    for step in walk(ns, root, PRE):
        if step.is_dir:
            continue
        entry = ns.stat(under(root, step.rel))
        seen, total = seen + 1, total + (entry.size if entry.storage == "small" else 0)
        if time.monotonic() > deadline:
            break
    return round(total * max(files, seen) / seen) if seen else 0


def queue_tree(machine: str, job, nbytes: int) -> None:
    """A tree job enters the FOP queue (its subtree leases already taken): t_T is its bytes at
    the in-cloud copy rate plus a directory operation's time per entry, so a small tree's job
    overtakes large transfers and a large one waits its turn; on an idle system it starts now."""
    store = QueueStore(records().table)
    config = store.config(SCHED)
    entries = job.files if job.files is not None else job.counted
    body = json.dumps(TreeJobSpec(user=job.user, id=job.id).to_event())
    try:
        store.enqueue(
            job.execution,
            machine,
            body,
            job.user,
            tuple(job.leases),
            nbytes,
            1.0 / CONFIG.s3_efs_rate,
            config,
            owner=job.owner,
            extra_s=entries * DIRECTORY_OP_SECONDS,
        )
    except TooManyRequestsError:
        _refused_tree(job)
        raise
    pump(config)


def _refused_tree(job) -> None:
    """A tree job refused by the user's job cap gives its leases back, so that the retry the 429
    asks for is not refused as busy by them: a new job is forgotten (the retry submits it again),
    a resumed one is stopped again, still resumable."""
    Lease(records().table, job.user, owner=job.owner).release()
    if job.attempt <= 1:
        TreeJobs(records().table).forget(job)
        return
    job.state, job.error = (
        STOPPED,
        {"code": "too-many-jobs", "message": "retry when a job ends", "status": 429},
    )
    TreeJobs(records().table).claim(job, RUNNING, job.attempt)


def waiting(name: str) -> dict | None:
    """A queued job's place (position, estimated start, workers), None once it started; a
    client polling it runs a dispatch pass now and then, as for relays (`describe`)."""
    store = QueueStore(records().table)
    place = store.position(name)
    if place is not None and time.monotonic() - _last_pump[0] >= PUMP_EVERY_S:
        pump()
        place = store.position(name)
    return place


def queue_state(job: str, caller: str) -> dict | None:
    """A job in the queue or on a worker: `{"state": "queued", "queue": place}` or `{"state":
    "running"}` when it is the caller's, `{}` when another user's; None once it left the queue."""
    item = QueueStore(records().table).job(job)
    if item is None:
        return None
    if item["user"] != caller:
        return {}
    place = waiting(job) if item["state"] == "queued" else None
    return {"state": "queued", "queue": place} if place else {"state": "running"}


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
