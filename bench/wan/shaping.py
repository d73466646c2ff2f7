"""Link shaping primitives: a token bucket for bandwidth and a delay line for propagation.

A segment first waits for its turn on the wire (the bucket, shared by every
connection of one direction, as on a real access link), then travels for the
one-way delay (the delay line, one per connection and direction so bytes stay
in order). Store-and-forward: a segment is delivered at the time its last byte
left plus the delay, so long transfers run at the set rate while a small
request/response shows the round-trip time.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

KIB = 1024
MIN_SEGMENT = 2 * KIB
MAX_SEGMENT = 64 * KIB
MIN_IN_FLIGHT = 256 * KIB
UNLIMITED_IN_FLIGHT = 8 * 1024 * KIB
SEGMENT_TIME = 0.004  # seconds of wire time per segment: finer at low rates, cheap at high ones
BURST_TIME = 0.010  # seconds of wire time that may go back-to-back: absorbs late wake-ups of a busy host


class TokenBucket:
    """Bytes leave at `rate` bytes/s; at most `burst` bytes go back-to-back after an idle spell.

    Tokens may go negative: a reservation takes its bytes at once and is told
    when they are through, so concurrent senders queue first come, first served
    and sleeping late never loses rate (the debt is measured against the clock).
    """

    def __init__(self, rate: float | None, burst: int, now: float) -> None:
        if rate is not None and rate <= 0:
            raise ValueError("rate must be positive or None for unlimited")
        self.rate = rate
        self.burst = burst
        self._tokens = float(burst)
        self._stamp = now

    def reserve(self, nbytes: int, now: float) -> float:
        """Take `nbytes`; return the time their last byte has left (≥ now)."""
        if self.rate is None:
            return now
        self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now
        self._tokens -= nbytes
        if self._tokens >= 0:
            return now
        return now + (-self._tokens) / self.rate


@dataclass(frozen=True)
class Lane:
    """One direction of the link: rate in bytes/s (None = unlimited) and one-way delay in seconds."""

    rate: float | None
    delay: float

    @property
    def segment(self) -> int:
        """Read size: a few ms of wire time, so timing stays fine-grained at any rate."""
        if self.rate is None:
            return MAX_SEGMENT
        return int(min(MAX_SEGMENT, max(MIN_SEGMENT, self.rate * SEGMENT_TIME)))

    @property
    def in_flight(self) -> int:
        """Bytes a connection may have on the wire: twice the bandwidth-delay product, so the
        delay line never throttles below the set rate, yet a stalled receiver stops the sender."""
        if self.rate is None:
            return UNLIMITED_IN_FLIGHT
        return int(max(MIN_IN_FLIGHT, 2 * self.rate * self.delay + 2 * self.segment))

    @property
    def burst(self) -> int:
        if self.rate is None:
            return MAX_SEGMENT
        return max(self.segment, int(self.rate * BURST_TIME))

    def bucket(self, now: float) -> TokenBucket:
        return TokenBucket(self.rate, self.burst, now)


class DelayLine:
    """FIFO of (due time, segment); `get` hands a segment out no earlier than its due time.

    None is the end-of-stream marker. Holds at most `capacity` bytes: `put`
    waits for room, which is how a slow receiver pushes back on the sender.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: deque[tuple[float, bytes | None]] = deque()
        self._bytes = 0
        self._changed = asyncio.Condition()

    async def put(self, due: float, data: bytes | None) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: self._bytes < self.capacity)
            self._items.append((due, data))
            self._bytes += len(data) if data else 0
            self._changed.notify_all()

    async def get(self) -> bytes | None:
        async with self._changed:
            await self._changed.wait_for(lambda: bool(self._items))
            due = self._items[0][0]
        await sleep_until(due)
        async with self._changed:
            _, data = self._items.popleft()
            self._bytes -= len(data) if data else 0
            self._changed.notify_all()
        return data


async def sleep_until(when: float) -> None:
    """Sleep until the event loop's clock reads `when`."""
    delay = when - asyncio.get_running_loop().time()
    if delay > 0:
        await asyncio.sleep(delay)
