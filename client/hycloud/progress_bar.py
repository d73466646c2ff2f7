"""Rich progress bars on stderr (stdout stays clean for --json and pipes), with rate and ETA."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from .transfer import Progress as TransferProgress

MIN_BYTES_FOR_BAR = 4 * 1024 * 1024


def transfer_bars() -> Progress:
    """The one look of a transfer bar: description, bar, bytes, rate, ETA, on stderr."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=False,
    )


class RichProgress(TransferProgress):
    """One bar per transfer phase (hash, upload, download); hidden for small transfers."""

    def __init__(self, enabled: bool = True) -> None:
        super().__init__()
        self.bars = transfer_bars()
        self.enabled = enabled
        self.task: TaskID | None = None

    def start(self, description: str, total: int) -> None:
        super().start(description, total)
        if not self.enabled or total < MIN_BYTES_FOR_BAR:
            self.task = None
            return
        if not self.bars.live.is_started:
            self.bars.start()
        self.task = self.bars.add_task(description, total=total)

    def update(self, done: int, total: int) -> None:
        if self.task is not None:
            self.bars.update(self.task, completed=done)

    def note(self, message: str) -> None:
        """Always shown (bars or not), above any bar, on stderr."""
        self.bars.console.print(message, highlight=False, markup=False, soft_wrap=True)

    def close(self) -> None:
        if self.bars.live.is_started:
            self.bars.stop()
