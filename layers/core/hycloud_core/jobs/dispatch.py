"""One dispatch pass: free the workers of ended jobs, size the pool (eq. 7/8), start jobs in FOP order.

The controller runs a bounded pass (PassBudget) inline when it queues a job (an idle system
starts it at once) and while a client waits on a queued job; the dispatcher function runs one when a job execution ends
(its status-change event) and every two minutes as a backstop. Passes may overlap: every change is a
conditional write (jobs/queue.py), so the worst an overlap costs is a lost claim.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from typing import Any

from ..control.relay_adoption import RelayPool, WorkerState
from .queue import QueueStore, SchedConfig

START_GRACE_S = 30.0  # a claimed job whose execution never appeared is given up after this
SCAN_LIMIT = 200  # queue items looked at per pass (blocked ones are skipped)

Describe = Callable[[str, str], str]  # (machine, execution name) -> status, "ABSENT" when none
Start = Callable[[str, str, str], None]  # (machine, execution name, input JSON)


@dataclass
class PassResult:
    released: list[str]
    started: list[tuple[str, str]]  # (job, worker)
    added: list[str]
    retired: list[str]


@dataclass(frozen=True)
class PassBudget:
    """How much of a pass one caller pays for. The dispatcher function's pass is unbounded (it
    is what drains the queue); a pass inside an API request is bounded so that the request never
    waits long on other users' work: it looks at the head of the queue only, starts a few jobs,
    and stops at its deadline, leaving the rest to the dispatcher (docs/SCHEDULING.md)."""

    seconds: float = 0.0  # 0: no deadline
    scan: int = SCAN_LIMIT  # waiting jobs looked at
    starts: int = 0  # jobs started at most (0: as many as free workers)


def pool_of(workers: list[dict[str, Any]], config: SchedConfig) -> RelayPool:
    """The eq. 7/8 view: a busy worker's BW_a is its current run's rate, an idle one is all available."""
    pool = RelayPool(
        config.theta_c, config.theta_l, min_workers=config.capacity, max_workers=config.max_workers
    )
    nominal = max((int(w.get("initial_bw", 0)) for w in workers), default=0) or 1
    for w in workers:
        initial = int(w.get("initial_bw", 0)) or nominal
        if w["state"] == "retiring":
            state, available = WorkerState.RETIRING, initial
        elif "job" in w and "job_bw" not in w:
            state, available = WorkerState.STARTING, initial  # no report yet: counts as free capacity
        else:
            state, available = WorkerState.ACTIVE, int(w["job_bw"]) if "job" in w else initial
        pool_worker = pool.add(w["sk"], initial)
        pool_worker.available_bw, pool_worker.state = available, state
    return pool


def _new_worker_id(workers: list[dict[str, Any]]) -> str:
    taken = {w["sk"] for w in workers}
    n = 1
    while f"w{n:03d}" in taken:
        n += 1
    return f"w{n:03d}"


def _size_pool(
    store: QueueStore, config: SchedConfig, instance: str, result: PassResult
) -> list[dict[str, Any]]:
    """Keep `capacity` workers at least; add one when all are congested, retire one lazily at leisure."""
    workers = store.workers()
    in_use = [w for w in workers if w["state"] != "retiring"]
    surplus = sorted(in_use, key=lambda w: "job" in w)[: max(0, len(in_use) - config.max_workers)]
    for w in surplus:  # the cap was lowered: idle workers go first, busy ones after their job
        store.retire_worker(w["sk"])
        result.retired.append(w["sk"])
    if surplus:
        return store.workers()
    for _ in range(min(config.capacity, config.max_workers) - len(in_use)):  # max_workers 0 pauses
        worker = _new_worker_id(workers)
        if store.add_worker(worker, instance):
            result.added.append(worker)
            workers = store.workers()
    if result.added:
        return workers
    adjustment = pool_of(workers, config).adjust()
    if adjustment.add:  # a worker of the same instance starts at its nominal rate (BW_o)
        worker, nominal = _new_worker_id(workers), max(int(w.get("initial_bw", 0)) for w in workers)
        if store.add_worker(worker, instance, nominal):
            result.added.append(worker)
    elif adjustment.retire:
        store.retire_worker(adjustment.retire)
        result.retired.append(adjustment.retire)
    return store.workers() if result.added or result.retired else workers


def reconcile(
    store: QueueStore, describe: Describe, result: PassResult, now: float, deadline: float | None = None
) -> None:
    """Release the workers whose job's execution has ended (or never started)."""
    for w in store.workers():
        if deadline is not None and time.monotonic() > deadline:
            return
        if "job" not in w:
            continue
        status = describe(w["machine"], w["job"])
        stale = status == "ABSENT" and now - int(w.get("since_us", 0)) / 1e6 > START_GRACE_S
        if (status not in ("RUNNING", "ABSENT") or stale) and store.release(w["job"]):
            result.released.append(w["job"])


def _spent(budget: PassBudget, deadline: float | None, result: PassResult) -> bool:
    if deadline is not None and time.monotonic() > deadline:
        return True
    return bool(budget.starts) and len(result.started) >= budget.starts


@dataclass(frozen=True)
class Dispatcher:
    """One instance's job starts: how a pass starts an execution and how it learns which ended
    (`describe`; None when the caller knows of none, as right after queueing a job)."""

    store: QueueStore
    start: Start
    describe: Describe | None = None
    instance: str = "home"

    def run(self, config: SchedConfig, budget: PassBudget | None = None) -> PassResult:
        """Start as many waiting jobs as there are free workers, smallest queue key first.

        `config` is the one in force (`QueueStore.config`: the deployment's with the run-time
        overrides); a `budget` bounds the pass (a request's)."""
        return _run_pass(self, config, budget or PassBudget())


def _run_pass(d: Dispatcher, config: SchedConfig, budget: PassBudget) -> PassResult:
    store = d.store
    now = time.time()
    deadline = time.monotonic() + budget.seconds if budget.seconds else None
    result = PassResult([], [], [], [])
    if d.describe is not None:
        reconcile(store, d.describe, result, now, deadline)
    workers = _size_pool(store, config, d.instance, result)
    free = [w for w in workers if w["state"] == "active" and "job" not in w]
    pool = pool_of(workers, config)
    free.sort(key=lambda w: -pool.workers[w["sk"]].available_bw)  # most available bandwidth first
    waiting = list(islice(store.head(budget.scan), budget.scan)) if free else []
    owners = frozenset(job.owner for job in waiting if job.owner)
    for job in waiting:
        if not free or _spent(budget, deadline, result):
            break
        if store.blocked(job, owners) or not store.retake_leases(job):
            continue
        worker = free[0]["sk"]
        if not store.claim(job, worker, now):
            free = [w for w in store.workers() if w["state"] == "active" and "job" not in w]
            continue
        free.pop(0)
        payload = {**json.loads(job.input), "worker": worker}
        if config.throttle_bps:
            payload["throttle_bps"] = config.throttle_bps
        try:
            d.start(job.machine, job.job, json.dumps(payload))
        except Exception:
            store.release(job.job)  # the ledger sees no execution and the next request queues it anew
            raise
        result.started.append((job.job, worker))
    return result
