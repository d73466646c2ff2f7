"""Fair use under moto: the per-user request-rate bucket, the job cap in the queue's
transactions, the bounded dispatch pass, implausible measurements and per-user limit records."""

from __future__ import annotations

import pytest

from hycloud_core import auth
from hycloud_core.control.limits import CURRENT_JOB_CAP, RateLimiter, TooManyRequestsError, UserLimits
from hycloud_core.errors import BadRequestError
from hycloud_core.jobs.dispatch import Dispatcher, PassBudget
from hycloud_core.jobs.queue import QueueEntry, QueueStore, SchedConfig
from hycloud_core.store.measurements import Measurements, Plausible, Sample
from hycloud_core.store.users import Users

MIB = 1024 * 1024


@pytest.fixture
def table(moto_table):
    return moto_table


# --- request rate ---------------------------------------------------------------------------------


def test_burst_then_the_rate_then_429_with_retry_after(table):
    limiter, limits = RateLimiter(table), UserLimits(rate_per_s=2, burst=3)
    for _ in range(3):
        limiter.admit("u", limits, now=100.0)  # the burst
    with pytest.raises(TooManyRequestsError) as refused:
        limiter.admit("u", limits, now=100.0)
    assert refused.value.status == 429 and refused.value.code == "rate-limited"
    assert refused.value.retry_after == 1  # 0.5 s until a token, in whole seconds
    limiter.admit("u", limits, now=100.5)  # one token a half second
    with pytest.raises(TooManyRequestsError):
        limiter.admit("u", limits, now=100.6)


def test_buckets_are_per_user_and_refill_when_idle(table):
    limiter, limits = RateLimiter(table), UserLimits(rate_per_s=1, burst=2)
    limiter.admit("a", limits, now=10.0)
    limiter.admit("a", limits, now=10.0)
    with pytest.raises(TooManyRequestsError):
        limiter.admit("a", limits, now=10.0)
    limiter.admit("b", limits, now=10.0)  # another user is not affected
    for _ in range(2):
        limiter.admit("a", limits, now=100.0)  # idle for long: a full bucket, not more
    with pytest.raises(TooManyRequestsError):
        limiter.admit("a", limits, now=100.0)


def test_the_bucket_is_shared_by_every_controller(table):
    """Two warm controllers (two limiters) draw from one bucket: concurrency does not multiply it."""
    first, second, limits = RateLimiter(table), RateLimiter(table), UserLimits(rate_per_s=1, burst=2)
    first.admit("u", limits, now=50.0)
    second.admit("u", limits, now=50.0)
    with pytest.raises(TooManyRequestsError):
        first.admit("u", limits, now=50.0)
    with pytest.raises(TooManyRequestsError):
        second.admit("u", limits, now=50.0)


def test_a_user_whose_bucket_refilled_costs_one_write_a_request(table):
    limiter, limits = RateLimiter(table), UserLimits(rate_per_s=1, burst=2)
    calls = []
    table.meta.client.meta.events.register("before-call.dynamodb.*", lambda **kw: calls.append(kw))
    for second in range(5):
        limiter.admit("u", limits, now=20.0 + second)  # one request a second: never busy
    assert len(calls) == 5
    calls.clear()
    limiter.admit("u", limits, now=25.0)
    limiter.admit("u", limits, now=25.0)  # busy now: the second takes the busy write at once
    assert len(calls) == 2
    with pytest.raises(TooManyRequestsError):
        limiter.admit("u", limits, now=25.0)


def test_a_refused_user_is_refused_from_memory_until_its_wait_ends(table):
    limiter, limits = RateLimiter(table), UserLimits(rate_per_s=1, burst=1)
    limiter.admit("u", limits, now=10.0)
    with pytest.raises(TooManyRequestsError):
        limiter.admit("u", limits, now=10.0)
    writes = []
    table.meta.client.meta.events.register("before-call.dynamodb.*", lambda **kw: writes.append(kw))
    with pytest.raises(TooManyRequestsError):
        limiter.admit("u", limits, now=10.5)
    assert writes == []  # no DynamoDB call for a request refused from memory
    limiter.admit("u", limits, now=11.0)


def test_rate_zero_is_unlimited(table):
    limiter = RateLimiter(table)
    for _ in range(50):
        limiter.admit("u", UserLimits(rate_per_s=0), now=1.0)


# --- per-user limits -------------------------------------------------------------------------------


def test_a_profile_overrides_the_deployment_limits(table, monkeypatch):
    monkeypatch.setenv("HYCLOUD_USER_RATE_PER_S", "7")
    monkeypatch.setenv("HYCLOUD_USER_MAX_JOBS", "9")
    deployment = UserLimits.deployment()
    assert (deployment.rate_per_s, deployment.max_jobs) == (7.0, 9)
    users = Users(table)
    users.create("ann", auth.new_key())
    assert users.set_limits("ann", max_jobs=3, rate_per_s=2.5) == {"max_jobs": 3, "rate_per_s": 2.5}
    own = deployment.for_profile(users.profile("ann"))
    assert (own.rate_per_s, own.burst, own.max_jobs) == (2.5, deployment.burst, 3)
    assert users.set_limits("ann", rate_per_s=None) == {"max_jobs": 3}  # back to the deployment's
    with pytest.raises(Exception, match="no user"):
        users.set_limits("nobody", max_jobs=1)


def test_identify_hands_back_the_profile_it_read(table):
    users = Users(table)
    key = auth.new_key()
    uid = users.create("bo", key)
    users.set_limits("bo", burst=4)
    identity, profile = users.identify_with_profile(f"Bearer {key.token}")
    assert identity.user_id == uid and profile["burst"] == 4


# --- the job cap -----------------------------------------------------------------------------------


def _queue(store, name, user="u", now=1000.0):
    entry = QueueEntry(
        job=name,
        machine="m",
        input="{}",
        user=user,
        paths=(f"/{name}",),
        size=MIB,
        seconds_per_byte=1 / MIB,
        now=now,
    )
    return store.enqueue(entry, SchedConfig())


def test_jobs_past_the_cap_are_refused_until_one_ends(table):
    store = QueueStore(table)
    token = CURRENT_JOB_CAP.set(("u", 2))
    try:
        assert _queue(store, "j1") and _queue(store, "j2")
        assert not _queue(store, "j1")  # queued already: not refused, not counted
        with pytest.raises(TooManyRequestsError) as refused:
            _queue(store, "j3")
        assert refused.value.code == "too-many-jobs" and refused.value.retry_after >= 1
        assert _queue(store, "other", user="v")  # another user's request is not capped by u's
        assert store.open_jobs("u") == 2
        started = []
        Dispatcher(store, lambda m, n, i: started.append(n)).run(SchedConfig(capacity=4, max_workers=4))
        assert store.release(started[0]) and store.open_jobs("u") == 1
        assert _queue(store, "j3")
    finally:
        CURRENT_JOB_CAP.reset(token)


def test_jobs_queued_outside_a_request_are_not_capped(table):
    store = QueueStore(table)
    for i in range(5):
        assert _queue(store, f"op{i}", user="operator")
    assert store.open_jobs("operator") == 5


# --- the bounded pass ------------------------------------------------------------------------------


def test_a_request_pass_starts_at_most_its_budget(table):
    store, started = QueueStore(table), []
    config = SchedConfig(capacity=8, max_workers=8)
    for i in range(6):
        _queue(store, f"j{i}", now=1000.0 + i)
    Dispatcher(store, lambda m, n, i: started.append(n)).run(config, PassBudget(seconds=5, starts=2))
    assert started == ["j0", "j1"]  # FOP order, two at most: the dispatcher starts the rest
    Dispatcher(store, lambda m, n, i: started.append(n)).run(config)
    assert started == [f"j{i}" for i in range(6)]


def test_a_request_pass_stops_at_its_deadline(table, monkeypatch):
    """A start takes 0.3 s of the pass's clock (not the machine's: a loaded machine once spent the
    0.2 s budget reading the queue, before any start)."""
    import hycloud_core.jobs.dispatch as dispatch

    store, started, clock = QueueStore(table), [], [100.0]
    for i in range(4):
        _queue(store, f"j{i}", now=1000.0 + i)
    monkeypatch.setattr(dispatch.time, "monotonic", lambda: clock[0])

    def slow_start(machine: str, name: str, payload: str) -> None:
        started.append(name)
        clock[0] += 0.3

    Dispatcher(store, slow_start).run(SchedConfig(capacity=8, max_workers=8), PassBudget(seconds=0.2))
    assert started == ["j0"]


# --- measurements ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nbytes", "seconds"),
    [(2**50, 1e-6), (10 * MIB, 1e-4), (2 * 10**9, 1.0), (1, 0.0)],
)
def test_implausible_measurements_are_refused_and_nothing_is_recorded(table, nbytes, seconds):
    store = Measurements(table, "u")
    with pytest.raises(BadRequestError) as refused:
        store.record([Sample("us-east-1", MIB, 1.0), Sample("us-east-1", nbytes, seconds)])
    assert refused.value.status == 400 and refused.value.code == "implausible-measurement"
    assert store.view(["us-east-1"])["estimates"]["us-east-1"] is None


def test_a_plausible_measurement_is_recorded_and_the_bound_is_configurable(table, monkeypatch):
    store = Measurements(table, "u")
    store.record([Sample("us-east-1", 100 * MIB, 1.0)])  # 800 Mbit/s
    assert store.view(["us-east-1"])["estimates"]["us-east-1"] == pytest.approx(100 * MIB, rel=0.01)
    monkeypatch.setenv("HYCLOUD_MAX_LINK_BPS", str(10 * MIB))
    assert Plausible.from_environment().max_bps == 10 * MIB
    with pytest.raises(BadRequestError):
        store.record([Sample("us-east-1", 100 * MIB, 1.0)])
