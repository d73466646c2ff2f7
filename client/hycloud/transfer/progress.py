"""Progress reporting: transfers call a Progress; the CLI draws it, the SDK default logs notes only."""

from __future__ import annotations

import logging
import threading

log = logging.getLogger("hycloud.transfer")


class Progress:
    """Receives byte counts from worker threads; subclass and override `update`/`start`/`note`."""

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

    def note(self, message: str) -> None:
        """A line the user should see (a resumed transfer, an ignored resume file)."""
        log.warning(message)
