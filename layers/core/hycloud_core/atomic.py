"""Files replaced whole: a reader sees the old bytes or the new, never part of them.

The temporary file has a name of its own (mkstemp) in the target's directory, so two runs of one
job writing the same file at once (a retried Lambda, a second worker) cannot write into each
other's temporary file, and the rename stays on one file system. It is created 0600.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import IO, Any

TMP_PREFIX = ".hc-tmp-"  # what upkeep may sweep when a writer died before its rename


@contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "wb", fsync: bool = False) -> Iterator[IO[Any]]:
    """A file to write that takes `path`'s place when the block ends without an exception."""
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, dir=os.path.dirname(os.fspath(path)) or ".")
    try:
        with os.fdopen(fd, mode) as out:
            yield out
            if fsync:
                out.flush()
                os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write(path: str | os.PathLike[str], data: bytes | str, fsync: bool = False) -> None:
    with atomic_open(path, "wb" if isinstance(data, bytes) else "w", fsync) as out:
        out.write(data)
