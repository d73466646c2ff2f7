import pytest

from hycloud_core.control.relay_adoption import RelayPool, Worker, WorkerState, congested, retire_candidate


def reported(*workers: tuple[str, float, float], **settings) -> RelayPool:
    """A pool of `(name, initial bandwidth, available bandwidth)` workers, each up and reported."""
    pool = RelayPool(**settings)
    for name, initial, available in workers:
        pool.add(name, initial)
        pool.report(name, available)
    return pool


def test_adds_only_when_every_worker_is_congested():
    pool = reported(("w1", 100.0, 20.0), ("w2", 100.0, 21.0))
    assert not pool.adjust().add
    pool.report("w2", 20.0)
    assert pool.adjust().add


def test_a_starting_worker_holds_back_further_adds_and_takes_no_transfer():
    pool = reported(("w1", 100.0, 0.0))
    assert pool.adjust().add
    pool.add("w2", 100.0, starting=True)
    assert not pool.adjust().add
    assert pool.dispatch() is None  # w1 has no spare bandwidth, w2 is not up yet
    pool.started("w2")
    assert pool.dispatch() == "w2"


def test_max_workers_caps_growth():
    pool = reported(("w1", 100.0, 0.0), max_workers=1)
    assert not pool.adjust().add


def test_retires_the_lowest_initial_bandwidth_lazily_when_all_are_at_leisure():
    pool = reported(("fast", 200.0, 150.0), ("slow", 100.0, 59.0))
    assert pool.adjust().retire is None  # slow is below 60 % of its initial bandwidth
    pool.report("slow", 60.0)
    assert pool.adjust().retire == "slow"
    assert pool.workers["slow"].state is WorkerState.RETIRING
    assert pool.dispatch() == "fast"  # a retiring worker gets no new transfer...
    pool.report("fast", 10.0)
    assert pool.dispatch() == "fast"
    assert pool.in_use() == 1 and len(pool.workers) == 2  # ...but still finishes its own
    assert pool.idle("slow")
    assert "slow" not in pool.workers
    assert not pool.idle("fast")
    assert pool.adjust().retire is None  # never below min_workers


def test_dispatch_goes_to_the_highest_available_bandwidth():
    pool = reported(("a", 100.0, 30.0), ("b", 100.0, 70.0), ("c", 100.0, 50.0))
    assert pool.dispatch() == "b"
    assert pool.dispatch(min_available=80.0) is None


def test_thresholds_use_each_workers_own_initial_bandwidth():
    workers = [Worker("a", 100.0, 20.0), Worker("b", 50.0, 10.0)]
    assert congested(workers)
    workers[1].available_bw = 11.0
    assert not congested(workers)
    assert retire_candidate([Worker("a", 100.0, 60.0), Worker("b", 50.0, 30.0)]).worker_id == "b"
    with pytest.raises(ValueError):
        RelayPool(theta_c=0.7, theta_l=0.6)


def test_pool_leisure_retires_an_idle_worker_beside_a_busy_one():
    workers = [Worker("busy", 100.0, 0.0), Worker("idle1", 100.0, 100.0), Worker("idle2", 100.0, 100.0)]
    assert retire_candidate(workers) is None  # eq. 8: one busy worker keeps all of them
    victim = retire_candidate(workers, leisure="pool")  # 200 of 300 free >= 60 %
    assert victim.worker_id in {"idle1", "idle2"}
    assert retire_candidate(workers[:2], leisure="pool") is None  # 100 of 200 free < 60 %
    with pytest.raises(ValueError):
        RelayPool(leisure="some")
