"""Threads of the mount and WebDAV that never take a termination signal.

`kill PID` is handed to any thread of the process that does not block the signal. In a FUSE
mount, libfuse's handler only marks its request loop as ended and counts on the signal having
interrupted a thread that waits in that loop; taken by one of these threads (the write-back
sender, a listing refresh, the unmount watcher) it woke nothing, and the mount lived on until the
next request. These threads block SIGHUP, SIGINT and SIGTERM, so the kernel hands them to the
main thread or one of libfuse's loops (Python runs its own handlers in the main thread anyway).
Threads they start inherit the mask.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

TERMINATING = {signal.SIGHUP, signal.SIGINT, signal.SIGTERM}


def start(name: str, target: Callable[..., object], *args: object) -> threading.Thread:
    """A daemon thread running `target(*args)` with the termination signals blocked."""

    def run() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, TERMINATING)
        target(*args)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread
