"""The native mount's local copy, kept within `--cache-size`: once the files fetched or sent take
more than `limit`, the least recently fetched or sent of those the cloud holds as they are here
become stubs again (the daemon frees their blocks and keeps their size and mtime; the next read
fetches them). A file written since it was sent is never evicted (the daemon answers EBUSY)."""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..caches import threads

LOW_WATER = 0.8  # evict down to this share of the limit, so one file more does not evict again
CHECK_S = 1.0  # a fetch or a send checks the bound at most this often


class Bound:
    def __init__(
        self, local: Path, limit: int, evict: Callable[[str], int], clean: Callable[[str], bool]
    ) -> None:
        self.local, self.limit, self.evict, self.clean = local, limit, evict, clean
        self.evicted = 0
        self._used: dict[str, tuple[float, int]] = {}  # path -> (last fetched or sent, its size then)
        self._estimate = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        threads.start("hycloud-native-bound", self._run)

    def touched(self, path: str) -> None:
        """`path` was fetched or sent: it is now the most recently used."""
        try:
            size = (self.local / path.lstrip("/")).stat().st_size
        except OSError:
            return
        with self._lock:
            _, before = self._used.pop(path, (0.0, 0))
            self._used[path] = (time.monotonic(), size)
            self._estimate += size - before
            over = self._estimate > self.limit
        if over:
            self._wake.set()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            self.enforce()
            time.sleep(CHECK_S)

    def enforce(self) -> None:
        """Evict, least recently used first, until the local copy is under the low-water mark."""
        used = _bytes(self.local)
        with self._lock:
            self._estimate = used
            order = sorted(self._used, key=lambda p: self._used[p][0])
        for path in order:
            if used <= self.limit * LOW_WATER:
                break
            if not self.clean(path):
                continue
            size = _blocks(self.local / path.lstrip("/"))
            code = self.evict(path.lstrip("/"))
            if code == errno.EBUSY:
                continue
            with self._lock:
                self._used.pop(path, None)
            if code == 0:
                used -= size
                self.evicted += 1
        with self._lock:
            self._estimate = used


def _blocks(path: Path) -> int:
    try:
        return path.stat().st_blocks * 512
    except OSError:
        return 0


def _bytes(folder: Path) -> int:
    """What the local copy takes on disk (stubs take nothing)."""
    total = 0
    for top, _, files in os.walk(folder):
        total += sum(_blocks(Path(top) / name) for name in files)
    return total
