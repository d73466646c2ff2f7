"""A bounded worker pool that yields each result as it finishes and stops at the first failure.

Results arrive as each piece completes, so the caller records progress piece by piece and an
interrupted transfer (error, Ctrl-C) resumes from exactly what finished. The workers are daemon
threads and nobody waits for them after a failure: a request still in flight cannot hold the
process open after Ctrl-C, and its piece is simply not recorded as done.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator


def run_parallel[T, R](fn: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """Yield fn(item) as each finishes; on the first exception hand out no more work and raise."""
    todo: queue.SimpleQueue[T] = queue.SimpleQueue()
    for item in items:
        todo.put(item)
    count = todo.qsize()
    results: queue.Queue[tuple[bool, object]] = queue.Queue()
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            try:
                item = todo.get_nowait()
            except queue.Empty:
                return
            try:
                results.put((True, fn(item)))
            except BaseException as err:  # handed to the caller's thread
                results.put((False, err))
                return

    for _ in range(min(workers, count)):
        threading.Thread(target=work, name="hycloud-transfer", daemon=True).start()
    try:
        for _ in range(count):
            ok, value = results.get()  # interruptible: Ctrl-C lands here
            if not ok:
                raise value  # type: ignore[misc]
            yield value  # type: ignore[misc]
    finally:
        stop.set()
