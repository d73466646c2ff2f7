"""Progress reporting: transfers call a Progress; the CLI draws it, the SDK default ignores it."""

from __future__ import annotations

import threading


class Progress:
    """Receives byte counts from worker threads; subclass and override `update`/`start`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.done = 0
        self.total = 0

    def start(self, description: str, total: int) -> None:
        self.total, self.done = total, 0

    def advance(self, nbytes: int) -> None:
        with self._lock:
            self.done += nbytes
            self.update(self.done, self.total)

    def update(self, done: int, total: int) -> None:
        pass
