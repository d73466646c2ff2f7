"""The native mount's local copy, kept within `--cache-size`: once the files fetched or sent take
more than `limit`, the least recently fetched or sent of those the cloud holds as they are here
become stubs again (the daemon frees their blocks and keeps their size and mtime; the next read
fetches them). A file changed since it was sent or fetched is never evicted: the daemon compares
its change time with the one it had then, and answers EBUSY."""

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
        self, local: Path, limit: int, evict: Callable[[str, int], int], clean: Callable[[str], bool]
    ) -> None:
        self.local, self.limit, self.evict, self.clean = local, limit, evict, clean
        self.evicted = 0
        # path -> (last fetched or sent, its size and change time then)
        self._used: dict[str, tuple[float, int, int]] = {}
        self._estimate = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread = threads.start("hycloud-native-bound", self._run)

    def touched(self, path: str, st: os.stat_result) -> None:
        """`path` was fetched or sent as it was at `st`: now the most recently used."""
        size, ctime = st.st_size, st.st_ctime_ns
        with self._lock:
            before = self._used.pop(path, (0.0, 0, 0))[1]
            self._used[path] = (time.monotonic(), size, ctime)
            self._estimate += size - before
            over = self._estimate > self.limit
        if over:
            self._wake.set()

    def ctime(self, path: str) -> int:
        """The change time `path` had when last fetched or sent (0: not known)."""
        with self._lock:
            return self._used.get(path, (0.0, 0, 0))[2]

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        self._thread.join(timeout=60)

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._stopping.is_set():
                return
            self.enforce()
            self._stopping.wait(CHECK_S)

    def enforce(self) -> None:
        """Evict, least recently used first, until the local copy is under the low-water mark."""
        used = _bytes(self.local)
        with self._lock:
            self._estimate = used
            order = sorted(self._used.items(), key=lambda item: item[1][0])
        for path, (_, _, ctime) in order:
            if used <= self.limit * LOW_WATER:
                break
            if not self.clean(path):
                continue
            size = _blocks(self.local / path.lstrip("/"))
            code = self.evict(path.lstrip("/"), ctime)
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
