"""Asyncio TCP proxy that puts every connection through one emulated access link.

Each accepted connection is forwarded to the target. Both directions run a
reader (takes a segment off the source socket, waits for the direction's
shared token bucket) and a writer (delivers segments off the delay line when
they are due). The reader paces itself at the link rate, so a fast client is
held back by TCP flow control on its own socket, as behind a real bottleneck.
The target's answers are taken off its socket as they come (`Eager`) and only
then paced: LocalStack's gateway drops a connection whose socket send times out,
which cut the last kilobytes off large downloads at 10 Mbit/s (S3 waits on a
slow reader far longer).

With `handshake` on, a new connection also pays the TCP three-way handshake:
the client's first bytes leave one RTT after it connected, as on a real link
(the proxy itself accepts at once on loopback).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from .shaping import DelayLine, Lane, TokenBucket, sleep_until
from .stats import ConnectionStats, LinkStats

STREAM_LIMIT = 256 * 1024


@dataclass(frozen=True)
class LinkShape:
    """The emulated link: rates in bits/s (None = unlimited), round-trip time in seconds."""

    down_bps: float | None
    up_bps: float | None
    rtt: float
    handshake: bool = True

    def __post_init__(self) -> None:
        if self.rtt < 0:
            raise ValueError("rtt must be >= 0")
        for rate in (self.down_bps, self.up_bps):
            if rate is not None and rate <= 0:
                raise ValueError("rates must be positive or None for unlimited")

    @property
    def up(self) -> Lane:
        return Lane(None if self.up_bps is None else self.up_bps / 8, self.rtt / 2)

    @property
    def down(self) -> Lane:
        return Lane(None if self.down_bps is None else self.down_bps / 8, self.rtt / 2)


class LinkProxy:
    """Listens on loopback and forwards to `target` through the shaped link."""

    def __init__(self, target: tuple[str, int], shape: LinkShape, stats: LinkStats) -> None:
        self.target = target
        self.shape = shape
        self.stats = stats
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task] = set()

    async def start(self, host: str, port: int) -> tuple[str, int]:
        now = asyncio.get_running_loop().time()
        self._up_bucket = self.shape.up.bucket(now)
        self._down_bucket = self.shape.down.bucket(now)
        self._server = await asyncio.start_server(self._accept, host, port, limit=STREAM_LIMIT)
        return self._server.sockets[0].getsockname()[:2]

    async def close(self) -> None:
        """Stop listening and cut every open connection."""
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _accept(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._handlers.add(task)
        self._writers.add(client_w)
        host, port = client_w.get_extra_info("peername")[:2]
        peer = f"{host}:{port}"
        conn = self.stats.open(peer)
        try:
            await self._forward(conn, client_r, client_w)
        except asyncio.CancelledError:
            pass  # the link is closing; ending quietly keeps asyncio from logging the cancel
        finally:
            self._writers.discard(client_w)
            client_w.transport.abort()
            self.stats.close(conn)
            self._handlers.discard(task)

    async def _forward(
        self, conn: ConnectionStats, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter
    ) -> None:
        opened = asyncio.get_running_loop().time()
        try:
            server_r, server_w = await asyncio.open_connection(*self.target, limit=STREAM_LIMIT)
        except OSError:
            return
        self._writers.add(server_w)
        rtt = self.shape.rtt if self.shape.handshake else 0.0
        up, down = self.shape.up, self.shape.down
        up_line, down_line = DelayLine(up.in_flight), DelayLine(down.in_flight)
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(_send(client_r, up_line, up, self._up_bucket, opened + rtt))
                group.create_task(_deliver(up_line, server_w, lambda n: self.stats.add_up(conn, n)))
                answers = Eager(server_r, down.segment, group)
                group.create_task(_send(answers, down_line, down, self._down_bucket, opened + 1.5 * rtt))
                group.create_task(_deliver(down_line, client_w, lambda n: self.stats.add_down(conn, n)))
        except* (OSError, RuntimeError):
            pass  # a reset on either side ends the connection; the finally cuts both ends
        finally:
            self._writers.discard(server_w)
            server_w.transport.abort()


class Eager:
    """A reader that empties `src` as fast as it sends, holding what it read until asked: the
    sender never waits on the emulated link (memory grows to one answer's size, a bench's)."""

    def __init__(self, src: asyncio.StreamReader, segment: int, group: asyncio.TaskGroup) -> None:
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()
        group.create_task(self._fill(src, segment))

    async def _fill(self, src: asyncio.StreamReader, segment: int) -> None:
        while True:
            data = await src.read(segment)
            self.queue.put_nowait(data)
            if not data:
                return

    async def read(self, n: int) -> bytes:
        """The next segment read (at most the `segment` it was made with, which is `n`)."""
        return await self.queue.get()


async def _send(
    src: asyncio.StreamReader | Eager, line: DelayLine, lane: Lane, bucket: TokenBucket, not_before: float
) -> None:
    """Move segments from `src` onto the wire: wait for the bucket, then the delay line carries them."""
    loop = asyncio.get_running_loop()
    while True:
        data = await src.read(lane.segment)
        now = loop.time()
        if not data:
            await line.put(max(now, not_before) + lane.delay, None)
            return
        sent = max(bucket.reserve(len(data), now), not_before)
        await line.put(sent + lane.delay, data)
        await sleep_until(sent)


async def _deliver(line: DelayLine, dst: asyncio.StreamWriter, count: Callable[[int], None]) -> None:
    """Write segments to `dst` as they arrive; pass on end-of-stream as a half-close."""
    while True:
        data = await line.get()
        if data is None:
            with contextlib.suppress(OSError, RuntimeError):
                if dst.can_write_eof():
                    dst.write_eof()
            return
        count(len(data))
        dst.write(data)
        await dst.drain()
