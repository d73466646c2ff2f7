"""The transfer pool: results as each finishes, and a failure (or Ctrl-C) does not wait for work
still in flight, so an interrupted transfer exits at once."""

from __future__ import annotations

import threading
import time

import pytest

from hycloud.transfer.parallel import run_parallel


def test_results_arrive_while_a_slow_item_is_still_running():
    release = threading.Event()

    def work(n: int) -> int:
        if n == 0:
            release.wait(10)
        return n

    results = run_parallel(work, range(5), workers=2)
    assert sorted(next(results) for _ in range(4)) == [1, 2, 3, 4]
    release.set()
    assert list(results) == [0]


def test_a_failure_raises_at_once_and_hands_out_no_more_work():
    started, hung = [], threading.Event()

    def work(n: int) -> int:
        started.append(n)
        if n == 0:
            hung.wait(30)  # a request that never answers
        if n == 1:
            raise OSError("disk full")
        return n

    t0 = time.monotonic()
    with pytest.raises(OSError, match="disk full"):
        list(run_parallel(work, range(100), workers=2))
    assert time.monotonic() - t0 < 5 and len(started) < 10
    hung.set()
