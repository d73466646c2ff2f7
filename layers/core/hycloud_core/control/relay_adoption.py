"""Adaptive relay-worker adoption (seed 000 §III-C, eq. 7 and 8).

A burst of downloads should get more relay bandwidth, but every extra worker costs money.
Workers report their available bandwidth BW_a (piggybacked on transfer acknowledgements);
BW_o is what each one measured when it started.

* Add a worker only when every in-use worker is congested, BW_a <= θ_c·BW_o (eq. 7): spare
  bandwidth anywhere is used first.
* When every in-use worker is idle enough, BW_a >= θ_l·BW_o (eq. 8), retire the one with the
  lowest BW_o — lazily: it takes no new transfer and leaves after its current ones, which damps
  oscillation in the worker count.
* Dispatch the next transfer to the in-use worker with the highest BW_a.

Eq. 8 read literally keeps every worker while any one of them is busy: at the end of a burst
one long transfer holds an idle pool alive. ``leisure="pool"`` applies the θ_l test to the
pool's total instead (Σ BW_a >= θ_l·Σ BW_o); adds still need every worker congested, so the
two rules cannot fight. Among workers of equal BW_o the most idle one is retired.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

THETA_C = 0.20
THETA_L = 0.60


class WorkerState(StrEnum):
    STARTING = "starting"  # added, not yet taking transfers
    ACTIVE = "active"
    RETIRING = "retiring"  # finishing its transfers, then gone


@dataclass
class Worker:
    worker_id: str
    initial_bw: float  # BW_o
    available_bw: float  # BW_a, last report
    state: WorkerState = WorkerState.ACTIVE


def congested(workers: Iterable[Worker], theta_c: float = THETA_C) -> bool:
    """Eq. 7 over the workers in use; a starting worker counts as free, so adds do not pile up."""
    in_use = [w for w in workers if w.state is not WorkerState.RETIRING]
    return bool(in_use) and all(
        w.state is WorkerState.ACTIVE and w.available_bw <= theta_c * w.initial_bw for w in in_use
    )


def retire_candidate(
    workers: Iterable[Worker], theta_l: float = THETA_L, min_workers: int = 1, leisure: str = "all"
) -> Worker | None:
    """Eq. 8: the active worker with the lowest BW_o (most idle among equals) at leisure."""
    in_use = [w for w in workers if w.state is not WorkerState.RETIRING]
    active = [w for w in in_use if w.state is WorkerState.ACTIVE]
    if len(active) <= min_workers or len(active) != len(in_use):
        return None
    if leisure == "all" and any(w.available_bw < theta_l * w.initial_bw for w in active):
        return None
    if leisure == "pool" and sum(w.available_bw for w in active) < theta_l * sum(
        w.initial_bw for w in active
    ):
        return None
    return min(active, key=lambda w: (w.initial_bw, -w.available_bw, w.worker_id))


def dispatch_target(workers: Iterable[Worker], min_available: float = 0.0) -> Worker | None:
    """The active worker with the highest BW_a, if it has more than ``min_available`` spare."""
    active = [w for w in workers if w.state is WorkerState.ACTIVE and w.available_bw > min_available]
    return max(active, key=lambda w: (w.available_bw, w.initial_bw, w.worker_id), default=None)


@dataclass
class Adjustment:
    add: bool = False
    retire: str | None = None


class RelayPool:
    """The controller's view of one instance's relay workers."""

    def __init__(
        self,
        theta_c: float = THETA_C,
        theta_l: float = THETA_L,
        min_workers: int = 1,
        max_workers: int = 8,
        leisure: str = "all",
    ) -> None:
        if not 0 <= theta_c < theta_l <= 1:
            raise ValueError("need 0 <= theta_c < theta_l <= 1")
        if leisure not in ("all", "pool"):
            raise ValueError("leisure is 'all' (eq. 8) or 'pool'")
        self.leisure = leisure
        self.theta_c, self.theta_l = theta_c, theta_l
        self.min_workers, self.max_workers = min_workers, max_workers
        self.workers: dict[str, Worker] = {}

    def add(self, worker_id: str, initial_bw: float, starting: bool = False) -> Worker:
        state = WorkerState.STARTING if starting else WorkerState.ACTIVE
        worker = Worker(worker_id, initial_bw, initial_bw, state)
        self.workers[worker_id] = worker
        return worker

    def started(self, worker_id: str, initial_bw: float | None = None) -> None:
        worker = self.workers[worker_id]
        if initial_bw is not None:
            worker.initial_bw = worker.available_bw = initial_bw
        worker.state = WorkerState.ACTIVE

    def report(self, worker_id: str, available_bw: float) -> None:
        self.workers[worker_id].available_bw = available_bw

    def adjust(self) -> Adjustment:
        """Evaluate eq. 7 and 8; marks the retiring worker. The caller starts any new worker."""
        in_use = sum(w.state is not WorkerState.RETIRING for w in self.workers.values())
        if in_use < self.max_workers and congested(self.workers.values(), self.theta_c):
            return Adjustment(add=True)
        victim = retire_candidate(self.workers.values(), self.theta_l, self.min_workers, self.leisure)
        if victim is None:
            return Adjustment()
        victim.state = WorkerState.RETIRING
        return Adjustment(retire=victim.worker_id)

    def dispatch(self, min_available: float = 0.0) -> str | None:
        worker = dispatch_target(self.workers.values(), min_available)
        return worker.worker_id if worker else None

    def idle(self, worker_id: str) -> bool:
        """Call when a worker has no transfer left; True when it was retiring and is now gone."""
        if self.workers[worker_id].state is WorkerState.RETIRING:
            del self.workers[worker_id]
            return True
        return False

    def in_use(self) -> int:
        return sum(w.state is not WorkerState.RETIRING for w in self.workers.values())
