"""What the gateway reads and writes through its user's write-back cache (`hycloud.caches`).

A PUT writes into the cache: a small file is answered once its bytes are there and the flusher
sends it with others in a bundle; a larger one is answered once it is in the cloud (it would go
alone anyway) and then leaves the cache. Stats and listings see cached files at once.
"""

from __future__ import annotations

import os
from typing import BinaryIO

from hycloud_core import content

from ..caches import Caches, local_entry
from ..caches.writeback import Cached


def cached_entry(caches: Caches, path: str) -> dict | None:
    """The entry of `path` from the cache, if the cache answers for it (content_hash included:
    the ETag stays the one the cloud will give)."""
    cached = caches.files.current(path)
    if cached is None:
        return None
    try:
        st = os.stat(cached.local)
        digest = content.hash_file(cached.local)[0]
    except FileNotFoundError:
        return None  # dropped meanwhile
    return local_entry(path, st.st_size, st.st_mtime) | {"content_hash": digest}


def open_cached(caches: Caches, path: str) -> BinaryIO | None:
    cached = caches.files.current(path)
    if cached is None:
        return None
    try:
        return open(cached.local, "rb")
    except FileNotFoundError:
        return None


class CacheWriter:
    """A PUT's body, written over the cached copy of `path`; `close` hands it to the flusher."""

    def __init__(self, caches: Caches, path: str, in_cloud: bool) -> None:
        self.caches, self.path = caches, path
        self.entry: Cached = caches.files.open(path, in_cloud, writer=True)
        self.file = open(self.entry.local, "wb")
        self.closed = False

    def write(self, data: bytes) -> int:
        return self.file.write(data)

    def close(self) -> None:
        """Small: done (sent soon). Large: sent now, errors raised here (the PUT fails with them)."""
        if self.closed:
            return
        self.closed = True
        try:
            self.file.close()
        finally:
            self.caches.files.changed(self.entry)
            self.caches.files.closed(self.entry, writer=True)
        if self.entry.size > self.caches.client.small_file_threshold:
            self.caches.files.sync([self.path])
            self.caches.files.drop(self.path)
            self.caches.meta.forget(self.path)


def create_empty(caches: Caches, path: str) -> None:
    """A new, empty file at `path`, in the cache only. Not a change to send: the body that follows
    is (an empty one too); were it, the flusher could send the empty file before the body came."""
    entry = caches.files.open(path, in_cloud=False, writer=False)
    caches.files.closed(entry, writer=False)


def send_under(caches: Caches, path: str) -> None:
    """What the cache holds at and under `path` reaches the cloud (before a copy or move of it)."""
    caches.files.sync([path, *caches.files.under(path)])
