"""Progress callbacks as s3transfer-style subscribers: no subclassing needed.

A subscriber is a callable taking the bytes just transferred, or an object with an
`on_progress(bytes_transferred)` method (and optionally `on_done()`). Hashing and the cloud's own
relay copy are not transfers, so subscribers see only the bytes that crossed to or from the user.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, runtime_checkable

from ..transfer import Progress

NOT_TRANSFERS = ("hash ", "relay ")


@runtime_checkable
class Subscriber(Protocol):
    def on_progress(self, bytes_transferred: int) -> None: ...


ProgressLike = Progress | Subscriber | Callable[[int], object] | Iterable | None


class Subscribers(Progress):
    """A Progress that hands each increment of a transfer phase to every subscriber."""

    def __init__(self, subscribers: list) -> None:
        super().__init__()
        self.callbacks = [_callback(s) for s in subscribers]
        self.transferring = True

    def start(self, description: str, total: int) -> None:
        super().start(description, total)
        self.transferring = not description.startswith(NOT_TRANSFERS)

    def advance(self, nbytes: int) -> None:
        super().advance(nbytes)
        if self.transferring and nbytes:
            for callback in self.callbacks:
                callback(nbytes)


def as_progress(progress: ProgressLike) -> Progress:
    """What the transfers take, from whatever the caller gave (None: progress is not reported)."""
    if progress is None:
        return Progress()
    if isinstance(progress, Progress):
        return progress
    if callable(progress) or isinstance(progress, Subscriber):
        return Subscribers([progress])
    return Subscribers(list(progress))


def report(progress: Progress, description: str, nbytes: int) -> None:
    """A transfer done in one request (a small file) reported as one step."""
    progress.start(description, nbytes)
    progress.advance(nbytes)


def _callback(subscriber) -> Callable[[int], object]:
    if isinstance(subscriber, Subscriber):
        return subscriber.on_progress
    if callable(subscriber):
        return subscriber
    raise TypeError(f"a progress subscriber is a callable or has on_progress(), not {subscriber!r}")
