"""The FOP queue and dispatch pass under moto: order, capacity, related paths, the starvation cap, eq. 7/8."""

from __future__ import annotations

import json

import pytest

from hycloud_core.jobs.dispatch import Dispatcher
from hycloud_core.jobs.queue import QueueEntry, QueueStore, SchedConfig, report_throughput
from hycloud_core.store.locks import Lease

MIB = 1024 * 1024


@pytest.fixture
def store(moto_table):
    return QueueStore(moto_table)


class Machine:
    def __init__(self) -> None:
        self.started: list[str] = []
        self.status: dict[str, str] = {}
        self.inputs: dict[str, dict] = {}

    def start(self, machine: str, name: str, payload: str) -> None:
        self.started.append(name)
        self.status[name] = "RUNNING"
        self.inputs[name] = json.loads(payload)

    def describe(self, machine: str, name: str) -> str:
        return self.status.get(name, "ABSENT")

    def finish(self, name: str) -> None:
        self.status[name] = "SUCCEEDED"


def _queue(store, config, name, size, now, path=None, user="u"):
    entry = QueueEntry(
        job=name,
        machine="m",
        input="{}",
        user=user,
        paths=(path or f"/{name}",),
        size=size,
        seconds_per_byte=1 / MIB,
        now=now,
    )
    return store.enqueue(entry, config)


def _tree(now: float) -> QueueEntry:
    """A tree job over /src and /dst, holding its leases as `job-1`."""
    return QueueEntry(
        job="tree", machine="m", input="{}", user="u", paths=("/src", "/dst"), now=now, owner="job-1"
    )


def test_smallest_fop_first_within_capacity(store):
    config = SchedConfig(capacity=1, max_workers=1)
    machine = Machine()
    for i, (name, size) in enumerate([("big", 50 * MIB), ("small", MIB), ("mid", 10 * MIB)]):
        assert _queue(store, config, name, size, 1000.0 + i)
    assert not _queue(store, config, "big", 50 * MIB, 1005.0)  # queued once
    Dispatcher(store, machine.start, machine.describe).run(config)
    assert machine.started == ["small"]
    assert store.position("big")["position"] == 2
    Dispatcher(store, machine.start, machine.describe).run(config)
    assert machine.started == ["small"]  # capacity 1: nothing more while it runs
    machine.finish("small")
    Dispatcher(store, machine.start, machine.describe).run(config)
    machine.finish("mid")
    Dispatcher(store, machine.start, machine.describe).run(config)
    assert machine.started == ["small", "mid", "big"]
    assert store.workers()[0]["sk"] == machine.inputs["big"]["worker"]


def test_related_paths_keep_request_order(store):
    config = SchedConfig(capacity=2, max_workers=2)
    machine = Machine()
    _queue(store, config, "dirjob", 50 * MIB, 1000.0, path="/d")
    _queue(store, config, "inside", MIB, 1001.0, path="/d/x")
    _queue(store, config, "other", 2 * MIB, 1002.0, path="/e/x")
    Dispatcher(store, machine.start, machine.describe).run(config)
    assert sorted(machine.started) == ["dirjob", "other"]  # /d/x waits for /d although smaller
    machine.finish("dirjob")
    Dispatcher(store, machine.start, machine.describe).run(config)
    assert machine.started[-1] == "inside"


def test_max_wait_caps_the_transfer_estimate(store):
    config = SchedConfig(capacity=1, max_workers=1, max_wait_s=5)
    machine = Machine()
    _queue(store, config, "huge", 10_000 * MIB, 1000.0)
    _queue(store, config, "late", 1, 1006.0)  # arrived after huge's arrival + max wait
    _queue(store, config, "early", 1, 1004.0)
    Dispatcher(store, machine.start, machine.describe).run(config)
    machine.finish(machine.started[-1])
    Dispatcher(store, machine.start, machine.describe).run(config)
    machine.finish(machine.started[-1])
    Dispatcher(store, machine.start, machine.describe).run(config)
    assert machine.started == ["early", "huge", "late"]


def test_workers_added_when_all_congested_and_retired_lazily(store):
    config = SchedConfig(capacity=1, max_workers=3)
    machine = Machine()
    _queue(store, config, "a", MIB, 1000.0)
    Dispatcher(store, machine.start, machine.describe).run(config)
    worker = machine.inputs["a"]["worker"]
    report_throughput(store.table, worker, 100 * MIB)  # BW_o
    report_throughput(store.table, worker, 10 * MIB)  # throttled: 10% <= theta_c
    _queue(store, config, "b", MIB, 1001.0)
    result = Dispatcher(store, machine.start, machine.describe).run(config)
    assert len(result.added) == 1 and machine.started == ["a", "b"]
    assert len(store.workers()) == 2
    assert store.workers()[1]["initial_bw"] == 100 * MIB  # a new worker starts at the nominal rate
    report_throughput(store.table, worker, 90 * MIB)  # both busy and at leisure (>= theta_l)
    report_throughput(store.table, machine.inputs["b"]["worker"], 80 * MIB)
    result = Dispatcher(store, machine.start, machine.describe).run(config)
    assert result.retired == [worker]  # the most idle of equal BW_o, lazily: it keeps its job
    assert {w["sk"]: (w["state"], w.get("job")) for w in store.workers()}[worker] == ("retiring", "a")
    machine.finish("a")
    Dispatcher(store, machine.start, machine.describe).run(config)
    assert [w["sk"] for w in store.workers()] == [machine.inputs["b"]["worker"]]


def test_a_path_lease_holds_jobs_below_it(store):
    config = SchedConfig(capacity=2, max_workers=2)
    machine = Machine()
    lease = Lease(store.table, "u")
    lease.acquire("/tree", 1)  # a tree job moving /tree
    _queue(store, config, "inside", MIB, 1000.0, path="/tree/x")
    _queue(store, config, "outside", MIB, 1001.0, path="/other/x")
    Dispatcher(store, machine.start, machine.describe).run(config)
    assert machine.started == ["outside"]
    lease.release()
    Dispatcher(store, machine.start, machine.describe).run(config)
    assert machine.started == ["outside", "inside"]


def test_background_work_waits_for_user_jobs_within_the_bound(store):
    config = SchedConfig(capacity=1, max_workers=0, max_wait_s=100.0)
    delta = QueueEntry(
        job="delta",
        machine="m",
        input="{}",
        user="u",
        size=MIB,
        seconds_per_byte=1 / MIB,
        now=1000.0,
        priority="background",
    )
    store.enqueue(delta, config)
    _queue(store, config, "relay", 50 * MIB, 1050.0)  # later and larger, but a user's transfer
    _queue(store, config, "late", MIB, 1200.0)  # arrives more than W after the delta
    assert [job.job for job in store.head()] == ["relay", "delta", "late"]


def test_a_queued_tree_job_is_not_held_by_its_own_leases_and_retakes_them(store):
    config = SchedConfig(capacity=1, max_workers=1)
    machine = Machine()
    own = Lease(store.table, "u", owner="job-1")
    own.acquire("/src", 1)
    store.enqueue(_tree(1000.0), config)
    other = Lease(store.table, "u")
    other.acquire("/dst", 1)  # another operation took the destination meanwhile
    Dispatcher(store, machine.start, machine.describe).run(config)
    assert machine.started == []
    other.release()
    Dispatcher(store, machine.start, machine.describe).run(config)
    assert machine.started == ["tree"]
    held = {(i["sk"], i["owner"]) for i in store.table.scan()["Items"] if i["pk"] == "LOCK#u"}
    assert held == {("/src", "job-1"), ("/dst", "job-1")}


def test_an_earlier_relay_is_not_held_by_the_leases_of_a_tree_job_queued_after_it(store):
    config = SchedConfig(capacity=1, max_workers=1)
    machine = Machine()
    _queue(store, config, "relay", 50 * MIB, 1000.0, path="/src/x")
    Lease(store.table, "u", owner="job-1").acquire("/src", 1)  # the tree request's leases
    store.enqueue(_tree(1001.0), config)
    Dispatcher(store, machine.start, machine.describe).run(config)
    assert machine.started == ["relay"]  # the tree job waits for it: related, and later


def test_a_queue_entry_is_checked_when_made_and_its_transfer_time_capped_at_w(store):
    with pytest.raises(ValueError):
        QueueEntry(job="j", machine="m", input="{}", user="u", priority="urgent")
    with pytest.raises(ValueError):
        QueueEntry(job="j", machine="m", input="{}", user="u", size=-1)
    config = SchedConfig(max_wait_s=100.0)
    entry = QueueEntry(
        job="tree", machine="m", input="{}", user="u", size=10 * MIB, seconds_per_byte=1 / MIB, extra_s=5.0
    )
    assert entry.transfer_s == 15.0
    store.enqueue(entry, config)
    store.enqueue(QueueEntry(job="huge", machine="m", input="{}", user="u", extra_s=1e6), config)
    assert {job.job: job.tt_us for job in store.head()} == {"tree": 15_000_000, "huge": 100_000_000}
