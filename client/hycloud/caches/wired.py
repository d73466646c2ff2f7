"""One client's metadata cache and write-back cache, wired together: what the mount and the
WebDAV gateway both serve from.

A file sent by the flusher is learned by the metadata cache (its folder's cached listing gains it,
nothing is listed again), and a sent file's local copy keeps answering reads while the cloud's
entry still has its size and mtime (uploads keep the mtime), so reading back what was written
costs no download.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..sdk import HyCloud, bundles
from .meta import TTL_S, MetaCache
from .writeback import LIMIT, Cached, WriteBack

MTIME_SLACK_S = 0.001  # the cloud keeps a sent file's mtime: a copy whose mtime differs is stale


def still_valid(meta: MetaCache, path: str, cached: Cached) -> bool:
    """Whether the cloud's entry at `path` still is the cached copy (same size and mtime)."""
    remote = meta.entry(path)
    try:
        st = os.stat(cached.local)
    except FileNotFoundError:
        return False
    if remote is None or remote["type"] != "file" or remote["size"] != st.st_size:
        return False
    return abs(float(remote["mtime"]) - st.st_mtime) < MTIME_SLACK_S


def learn_sent(meta: MetaCache, sent: list[tuple[str, Path]]) -> None:
    """Files now in the cloud: their entries are known from their local copies."""
    for path, local in sent:
        try:
            st = os.stat(local)
        except FileNotFoundError:
            meta.forget(path)
            continue
        meta.learn(path, local_entry(path, st.st_size, st.st_mtime))


def local_entry(path: str, size: int, mtime: float) -> dict:
    return {"name": os.path.basename(path), "type": "file", "size": size, "mtime": mtime}


class Caches:
    """`meta` and `files` (the write-back cache, in `folder`) for `client`."""

    def __init__(self, client: HyCloud, folder: Path, limit: int = LIMIT, ttl: float = TTL_S) -> None:
        self.client = client
        self.meta = MetaCache(client, ttl=ttl)
        self.files = WriteBack(
            lambda pairs: bundles.put_files(self.client, pairs),
            folder,
            limit=limit,
            ttl=ttl,
            on_flushed=lambda sent: learn_sent(self.meta, sent),
        )
        self.files.still_valid = lambda path, cached: still_valid(self.meta, path, cached)
        self.files.make_dir = lambda path: self.client.mkdir(path, parents=True)
        self.files.dirs_made = self.meta.learn_dirs
