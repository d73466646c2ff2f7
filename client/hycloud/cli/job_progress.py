"""Progress of a tree job on stderr (files done of total), and what to say when the user leaves.

Rich loads only when there is something to draw or say: `rm`, `mv` and `cp` with no bar (a pipe,
--quiet, --json) never import it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING

from ..sdk.tree_jobs import TreeJobDetached
from ..transfer.progress import Progress as TransferProgress
from . import exit_codes
from .output import bars_on

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID


class FilesBar(TransferProgress):
    """One bar counting files; drawn only once a job reports a total."""

    def __init__(self, enabled: bool = True) -> None:
        super().__init__()
        self.enabled = enabled
        self.task: TaskID | None = None
        self._console: Console | None = None
        self._bars: Progress | None = None

    @property
    def console(self) -> Console:
        """stderr, through Rich (made on first use)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=True)
        return self._console

    @property
    def bars(self) -> Progress:
        if self._bars is None:
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self._bars = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.completed:,.0f}/{task.total:,.0f} files"),
                TimeRemainingColumn(),
                console=self.console,
            )
        return self._bars

    def start(self, description: str, total: int) -> None:
        super().start(description, total)
        if not self.enabled:
            return
        from rich.markup import escape

        if not self.bars.live.is_started:
            self.bars.start()
        if self.task is None:
            self.task = self.bars.add_task(escape(description), total=total)
        self.bars.update(self.task, total=total)

    def update(self, done: int, total: int) -> None:
        if self.task is not None:
            self.bars.update(self.task, completed=done, total=total)

    def close(self) -> None:
        if self._bars is not None and self._bars.live.is_started:
            self._bars.stop()


@contextmanager
def following(bar: FilesBar) -> Iterator[FilesBar]:
    """Close the bar at the end; on Ctrl-C say that the job goes on, and how to follow it, and
    exit 130 (an interrupt must never look like success)."""
    try:
        yield bar
    except TreeJobDetached as detached:
        from rich.markup import escape

        bar.close()
        bar.console.print(escape(detached.message), highlight=False)
        raise SystemExit(exit_codes.INTERRUPTED) from None
    finally:
        bar.close()


def following_files() -> AbstractContextManager[FilesBar]:
    """A tree job's files bar, closed at the end; Ctrl-C says the job goes on (exit 130)."""
    return following(FilesBar(enabled=bars_on()))
