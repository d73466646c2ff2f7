"""A bounded worker pool that stops at the first failure instead of finishing queued work.

An interrupted transfer (error, Ctrl-C) then leaves as little behind as possible, and the
resumable state on disk or in S3 says exactly what finished.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait


def run_parallel[T, R](fn: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """Yield fn(item) as each finishes; on the first exception cancel what has not started and raise."""
    pool = ThreadPoolExecutor(workers)
    try:
        pending = {pool.submit(fn, item) for item in items}
        while pending:
            done, pending = wait(pending, return_when=FIRST_EXCEPTION)
            for future in done:
                yield future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
