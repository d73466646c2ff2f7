"""The FOP queue as the controller uses it (hycloud_core.jobs.queue, docs/SCHEDULING.md):
a queued job starts in a bounded dispatch pass run at once, so on an idle system it starts in
the request that queued it; a client polling a queued job runs one now and then; tree jobs enter
the queue here with their estimated transfer time.
"""

from __future__ import annotations

import json
import os
import time

from context import CONFIG, records

from hycloud_core.control.fop import DIRECTORY_OP_SECONDS
from hycloud_core.control.limits import TooManyRequestsError
from hycloud_core.fs.tree_walk import PRE, under, walk
from hycloud_core.jobs import executions
from hycloud_core.jobs.dispatch import Dispatcher, PassBudget
from hycloud_core.jobs.queue import QueueEntry, QueueStore, SchedConfig
from hycloud_core.jobs.specs import TreeJobSpec
from hycloud_core.store.locks import Lease
from hycloud_core.store.measurements import Measurements
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
        Dispatcher(store, executions.start, executions.status, INSTANCE).run(
            store.config(SCHED), REQUEST_PASS
        )
    else:
        Dispatcher(store, executions.start, instance=INSTANCE).run(config, REQUEST_PASS)


def seconds_per_byte(user_id: str, config: SchedConfig, instance: str = INSTANCE) -> float:
    """The user's measured download rate from the instance the job runs at (eq. 4), or the
    deployment's default."""
    rate = Measurements(records().table, user_id).view([instance])["estimates"].get(instance)
    return 1.0 / (rate or config.default_bps)


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
    entry = QueueEntry(
        job=job.execution,
        machine=machine,
        input=json.dumps(TreeJobSpec(user=job.user, id=job.id).to_event()),
        user=job.user,
        paths=tuple(job.leases),
        size=nbytes,
        seconds_per_byte=1.0 / CONFIG.s3_efs_rate,
        extra_s=entries * DIRECTORY_OP_SECONDS,
        owner=job.owner,
    )
    try:
        store.enqueue(entry, config)
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
    client polling it runs a dispatch pass now and then."""
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
