"""Progress of a tree job on stderr (files done of total), and what to say when the user leaves."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

from ..sdk.tree_jobs import TreeJobDetached
from ..transfer import Progress as TransferProgress
from . import exit_codes


class FilesBar(TransferProgress):
    """One bar counting files; drawn only once a job reports a total."""

    def __init__(self, enabled: bool = True) -> None:
        super().__init__()
        self.console = Console(stderr=True)
        self.bars = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed:,.0f}/{task.total:,.0f} files"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self.enabled = enabled
        self.task: TaskID | None = None

    def start(self, description: str, total: int) -> None:
        super().start(description, total)
        if not self.enabled:
            return
        if not self.bars.live.is_started:
            self.bars.start()
        if self.task is None:
            self.task = self.bars.add_task(escape(description), total=total)
        self.bars.update(self.task, total=total)

    def update(self, done: int, total: int) -> None:
        if self.task is not None:
            self.bars.update(self.task, completed=done, total=total)

    def close(self) -> None:
        if self.bars.live.is_started:
            self.bars.stop()


@contextmanager
def following(bar: FilesBar) -> Iterator[FilesBar]:
    """Close the bar at the end; on Ctrl-C say that the job goes on, and how to follow it, and
    exit 130 (an interrupt must never look like success)."""
    try:
        yield bar
    except TreeJobDetached as detached:
        bar.close()
        bar.console.print(escape(detached.message), highlight=False)
        raise SystemExit(exit_codes.INTERRUPTED) from None
    finally:
        bar.close()
