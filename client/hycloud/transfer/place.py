"""A finished download put in its file's place, the old bytes freed off the transfer's path.

`os.replace` onto an existing file costs 3-16 ms for a 23 MB file on ext4: the old file's blocks
are freed and the new one's writeback forced (auto_da_alloc) before it returns. Exchanging the two
names (Linux renameat2 RENAME_EXCHANGE) is as atomic, a reader sees the old file or the new, and
takes 0.1 ms; the old bytes, now under a part name the sync watcher ignores, are removed in the
background. Elsewhere, or when the exchange is refused, a plain replace.
"""

from __future__ import annotations

import ctypes
import os
import stat
import sys
import uuid
from contextlib import suppress
from functools import cache
from pathlib import Path

from . import background

RENAME_EXCHANGE = 2
AT_FDCWD = -100
UNLINK_WAIT_S = 30.0


@cache
def _renameat2():
    """libc's renameat2, or None (not Linux, or a libc without it)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None


def _exchange(a: Path, b: Path) -> bool:
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    return renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0


def _regular(path: Path) -> bool:
    """A plain file (not a folder, a link or nothing): only those are exchanged."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def put_in_place(tmp: Path, target: Path) -> None:
    """`tmp` becomes `target` in one step; a file that was at `target` is removed later."""
    if not _regular(target) or not _exchange(tmp, target):
        tmp.replace(target)
        return
    old = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.old.hycloud-part")
    tmp.rename(old)  # a fresh name: nothing is replaced, so nothing is flushed or freed here

    def free() -> None:
        with suppress(OSError):
            old.unlink()

    background.later("hycloud-free-old", free, UNLINK_WAIT_S)
