"""Open files of the mount: readers with read-ahead over ranged reads, writers spooled locally.

A reader keeps one window of the file (at least `read_ahead` bytes from where the kernel last
asked), so sequential reads of small pieces cost one ranged GET per window. A writer holds the
whole file in a local temporary file and uploads it when the file is closed (flush), so the
cloud only ever sees complete files that passed the SDK's checks.
"""

from __future__ import annotations

import os
import tempfile
import threading

from ..sdk import HyCloud
from ..sdk.files import RemoteReader

READ_AHEAD = 8 * 1024 * 1024


class ReadHandle:
    def __init__(self, client: HyCloud, path: str, read_ahead: int = READ_AHEAD) -> None:
        self.raw = RemoteReader(client, path)
        self.read_ahead = read_ahead
        self._start, self._window = 0, b""
        self._lock = threading.Lock()

    def read(self, size: int, offset: int) -> bytes:
        with self._lock:
            end = offset + size
            if not (self._start <= offset and end <= self._start + len(self._window)):
                if offset >= self.raw.size:
                    return b""
                self._window = self.raw.read_range(offset, max(size, self.read_ahead))
                self._start = offset
            return self._window[offset - self._start : end - self._start]

    def close(self) -> None:
        self.raw.close()


class WriteHandle:
    """A file being written: its whole content in a spool file until flushed to the cloud."""

    def __init__(self, client: HyCloud, path: str, existing: bool = False, new: bool = False) -> None:
        """`existing`: start from the cloud's content (open for update); `new`: upload even if empty."""
        self.client, self.path = client, path
        fd, self.spool = tempfile.mkstemp(prefix="hycloud-mount-")
        os.close(fd)
        if existing:
            client.get(path, self.spool)
        self.dirty = new
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        return os.path.getsize(self.spool)

    def write(self, data: bytes, offset: int) -> int:
        with self._lock, open(self.spool, "r+b") as f:
            f.seek(offset)
            f.write(data)
            self.dirty = True
        return len(data)

    def read(self, size: int, offset: int) -> bytes:
        with self._lock, open(self.spool, "rb") as f:
            f.seek(offset)
            return f.read(size)

    def truncate(self, length: int) -> None:
        with self._lock:
            os.truncate(self.spool, length)
            self.dirty = True

    def flush(self) -> None:
        """Upload if anything changed since the last upload (write-back on close)."""
        with self._lock:
            if self.dirty:
                self.client.put(self.spool, self.path)
                self.dirty = False

    def close(self) -> None:
        os.unlink(self.spool)
