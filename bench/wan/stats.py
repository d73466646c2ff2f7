"""Byte counters of a link, per connection and in total, readable from any thread.

Bytes are counted when they are delivered at the far end of the link, so once
a client has a response in hand the counters already include it.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from dataclasses import dataclass, replace

KEEP_CLOSED = 10_000


@dataclass
class ConnectionStats:
    id: int
    peer: str
    opened: float
    closed: float | None = None
    bytes_up: int = 0
    bytes_down: int = 0


class LinkStats:
    """Totals and per-connection counts; a lock because the proxy thread writes while a benchmark reads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._open: dict[int, ConnectionStats] = {}
        self._closed: deque[ConnectionStats] = deque(maxlen=KEEP_CLOSED)
        self.bytes_up = 0
        self.bytes_down = 0

    def open(self, peer: str) -> ConnectionStats:
        conn = ConnectionStats(id=next(self._ids), peer=peer, opened=time.time())
        with self._lock:
            self._open[conn.id] = conn
        return conn

    def close(self, conn: ConnectionStats) -> None:
        with self._lock:
            conn.closed = time.time()
            if self._open.pop(conn.id, None) is not None:
                self._closed.append(conn)

    def add_up(self, conn: ConnectionStats, nbytes: int) -> None:
        with self._lock:
            conn.bytes_up += nbytes
            self.bytes_up += nbytes

    def add_down(self, conn: ConnectionStats, nbytes: int) -> None:
        with self._lock:
            conn.bytes_down += nbytes
            self.bytes_down += nbytes

    def reset(self) -> None:
        """Zero the totals and open connections' counts; forget closed connections."""
        with self._lock:
            self.bytes_up = self.bytes_down = 0
            self._closed.clear()
            for conn in self._open.values():
                conn.bytes_up = conn.bytes_down = 0

    def connections(self) -> list[ConnectionStats]:
        """Copies of every known connection (closed ones first), oldest first."""
        with self._lock:
            return [replace(c) for c in (*self._closed, *self._open.values())]
