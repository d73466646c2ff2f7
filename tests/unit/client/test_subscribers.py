"""Progress subscribers: callables or objects with on_progress, fed transfer bytes only."""

from __future__ import annotations

import pytest

from hycloud.sdk.subscribers import as_progress
from hycloud.transfer import Progress


class Counter:
    def __init__(self) -> None:
        self.seen: list[int] = []

    def on_progress(self, bytes_transferred: int) -> None:
        self.seen.append(bytes_transferred)


def test_callables_and_objects_get_each_increment_of_a_transfer_not_of_hashing():
    calls: list[int] = []
    counter = Counter()
    progress = as_progress([calls.append, counter])
    progress.start("hash f", 100)
    progress.advance(100)
    progress.start("upload f", 100)
    progress.advance(60)
    progress.advance(40)
    assert calls == counter.seen == [60, 40]


def test_a_progress_object_passes_through_and_none_reports_nothing():
    mine = Progress()
    assert as_progress(mine) is mine
    as_progress(None).advance(5)  # no subscriber: nothing to call


def test_something_that_cannot_subscribe_is_refused():
    with pytest.raises(TypeError, match="on_progress"):
        as_progress([42])
