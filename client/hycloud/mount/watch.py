"""Ending the mount process when its folder is unmounted here, even if the kernel keeps it alive.

`fusermount3 -u DIR` removes the mount from this mount namespace only. A process that copied the
namespace while DIR was mounted (a container, a sandbox, a service with a private /tmp) keeps the
filesystem alive in its copy, so the kernel never ends the connection and libfuse waits forever.
The watcher reads this namespace's mount table and, once DIR has left it, sends everything cached
and ends the process (`os._exit`: libfuse's threads still wait on a connection only the other
namespaces hold). A signal would not do: once libfuse's loop has ended, its handlers are gone and
SIGTERM would kill the process while it sends.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from ..caches import threads

POLL_S = 0.5
MOUNTINFO = "/proc/self/mountinfo"


def mounted_here(mountpoint: str, table: str = MOUNTINFO) -> bool:
    """Whether `mountpoint` is in this namespace's mount table (no call into the mount itself)."""
    try:
        with open(table) as f:
            lines = f.read().splitlines()
    except OSError:
        return True  # no table to read: assume mounted, never end the process on a guess
    return any(_unescape(line.split()[4]) == mountpoint for line in lines if len(line.split()) > 4)


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes (\\040...)."""
    for code in ("\\040", "\\011", "\\012", "\\134"):
        field = field.replace(code, chr(int(code[1:], 8)))
    return field


def watch(
    mountpoint: str, unmounted: Callable[[], object], mounted: threading.Event, poll: float = POLL_S
) -> threading.Thread:
    """Start watching; `unmounted` runs once `mounted` is set (libfuse's INIT came, so the mount is
    in the table) and `mountpoint` is no longer mounted here. Waiting for INIT rather than polling
    for the mount to appear: a mount used for less than one poll would never be seen."""
    path = os.path.realpath(mountpoint)

    def run() -> None:
        mounted.wait()
        while mounted_here(path):
            time.sleep(poll)
        unmounted()

    return threads.start("hycloud-unmount-watch", run)
