"""Token bucket arithmetic and delay-line order and back-pressure, without sockets."""

from __future__ import annotations

import asyncio

import pytest

from bench.wan.proxy import LinkShape
from bench.wan.shaping import MAX_SEGMENT, MIN_IN_FLIGHT, DelayLine, Lane, TokenBucket


def test_bucket_sends_burst_then_paces_at_rate() -> None:
    bucket = TokenBucket(rate=1000.0, burst=100, now=0.0)
    assert bucket.reserve(100, 0.0) == 0.0
    assert bucket.reserve(100, 0.0) == pytest.approx(0.1)
    assert bucket.reserve(50, 0.0) == pytest.approx(0.15)  # queued behind the first reservation


def test_bucket_refills_only_up_to_burst() -> None:
    bucket = TokenBucket(rate=1000.0, burst=100, now=0.0)
    bucket.reserve(100, 0.0)
    assert bucket.reserve(300, 10.0) == pytest.approx(10.2)  # idle 10 s banks 100 bytes, not 10 000


def test_bucket_keeps_rate_when_sender_wakes_late() -> None:
    bucket = TokenBucket(rate=1000.0, burst=100, now=0.0)
    done = 0.0
    for _ in range(100):  # every wake-up is 1 ms late; the finish time must not drift by 100 ms
        done = bucket.reserve(100, done + 0.001)
    # 10 000 bytes, the first 100 from the burst: 9.9 s at 1000 B/s, plus the first late wake-up
    assert done == pytest.approx(9.901, abs=1e-6)


def test_unlimited_bucket_never_waits() -> None:
    bucket = TokenBucket(rate=None, burst=1, now=0.0)
    assert bucket.reserve(10**9, 5.0) == 5.0


def test_lane_sizes_follow_rate_and_delay() -> None:
    lane = LinkShape(down_bps=50e6, up_bps=None, rtt=0.1).down
    assert lane.rate == 50e6 / 8 and lane.delay == 0.05
    assert lane.segment == int(50e6 / 8 * 0.004)
    assert lane.in_flight >= 2 * lane.rate * lane.delay
    assert Lane(None, 0.05).segment == MAX_SEGMENT
    assert Lane(1000.0, 0.0).in_flight == MIN_IN_FLIGHT


def test_shape_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        LinkShape(down_bps=0, up_bps=None, rtt=0.1)
    with pytest.raises(ValueError):
        LinkShape(down_bps=None, up_bps=None, rtt=-1)


def test_delay_line_delivers_in_order_not_before_due() -> None:
    async def run() -> list[tuple[bytes | None, float]]:
        loop = asyncio.get_running_loop()
        line, start = DelayLine(capacity=1 << 20), loop.time()
        for i, data in enumerate([b"a", b"bb", None]):
            await line.put(start + 0.02 * (i + 1), data)
        return [(await line.get(), loop.time() - start) for _ in range(3)]

    got = asyncio.run(run())
    assert [data for data, _ in got] == [b"a", b"bb", None]
    for i, (_, at) in enumerate(got):
        assert at >= 0.02 * (i + 1) - 0.002


def test_delay_line_full_makes_sender_wait() -> None:
    async def run() -> bool:
        line = DelayLine(capacity=10)
        await line.put(0.0, b"x" * 10)
        blocked = asyncio.create_task(line.put(0.0, b"y"))
        await asyncio.sleep(0.01)
        was_blocked = not blocked.done()
        assert await line.get() == b"x" * 10
        await asyncio.wait_for(blocked, 1)
        return was_blocked

    assert asyncio.run(run())
