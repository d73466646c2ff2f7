"""Open files of the mount: readers with read-ahead over ranged reads, and handles on the
write-back cache's local copies (`hycloud/caches/writeback.py`).

A reader keeps one window of the file (at least `read_ahead` bytes from where the kernel last
asked), so sequential reads of small pieces cost one ranged GET per window. A file opened for
writing is copied into the cache first (unless truncated), so the cloud only ever receives
whole files, which pass the SDK's checks.
"""

from __future__ import annotations

import os
import threading

from ..caches.writeback import Cached, WriteBack
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


class CachedHandle:
    """An open file of the write-back cache: reads and writes go to its local copy."""

    def __init__(self, cache: WriteBack, entry: Cached, writer: bool) -> None:
        self.cache, self.entry, self.writer = cache, entry, writer
        self.fd = os.open(entry.local, os.O_RDWR if writer else os.O_RDONLY)

    def write(self, data: bytes, offset: int) -> int:
        written = os.pwrite(self.fd, data, offset)
        self.cache.changed(self.entry)
        return written

    def read(self, size: int, offset: int) -> bytes:
        return os.pread(self.fd, size, offset)

    def truncate(self, length: int) -> None:
        """A copy already `length` long is not truncated (a create's new copy is empty): on ext4 a
        file truncated to 0 and then written is flushed to disk at its close (`auto_da_alloc`),
        which made every file created through the mount wait on a disk write. Still a change:
        a created file is sent even if nothing is written to it."""
        if os.fstat(self.fd).st_size != length:
            os.ftruncate(self.fd, length)
        self.cache.changed(self.entry)

    def close(self) -> None:
        os.close(self.fd)
        self.cache.closed(self.entry, self.writer)
