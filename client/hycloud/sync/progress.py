"""Progress over a whole sync: files done of all, bytes sent or received of all, rate and ETA."""

from __future__ import annotations

import threading

from rich.progress import Progress, TaskID

from ..progress_bar import transfer_bars


class SyncProgress:
    """Counts bytes from transfer threads (a subscriber: call it with each increment) and files
    as they finish; draws one Rich bar on stderr when enabled."""

    def __init__(self, enabled: bool = False) -> None:
        self._lock = threading.Lock()
        self.bytes = 0
        self.files = 0
        self.total_files = 0
        self.bars: Progress | None = None
        if enabled:
            self.bars = transfer_bars()
        self.task: TaskID | None = None

    def start(self, files: int, total_bytes: int) -> None:
        self.total_files = files
        if self.bars is not None and files:
            self.bars.start()
            self.task = self.bars.add_task(self._label(), total=total_bytes or None)  # None: not known

    def __call__(self, nbytes: int) -> None:
        with self._lock:
            self.bytes += nbytes
            if self.task is not None and self.bars is not None:
                self.bars.update(self.task, completed=self.bytes)

    def file_done(self, count: int = 1) -> None:
        with self._lock:
            self.files += count
            if self.task is not None and self.bars is not None:
                self.bars.update(self.task, description=self._label())

    def _label(self) -> str:
        return f"sync {self.files}/{self.total_files} files"

    def close(self) -> None:
        if self.bars is not None and self.bars.live.is_started:
            self.bars.stop()
