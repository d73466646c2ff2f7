"""Settling: a delta upload's version, acknowledged once verified and closed on EFS, put in S3.

The delta job keeps the version in the relay cache under its content's name, marked settling
(never evicted), and its object record says `settling` with no S3 key (store/objects.py). The
settle job, started right after the acknowledgement, copies it to its content address, checked
by S3's own part checksums, then records the key and releases the cached copy. Upkeep settles
any version still settling well after (`settle_late`): a settle job that never ran is caught there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .. import content
from ..store.multipart import ObjectWriter
from ..store.objects import Objects
from .relay_cache import RelayCache

LATE_S = 300  # a version still settling this long after it was kept had its settle job lost


class SettleFailed(Exception):
    """A settling version's bytes are not in the relay cache, or not the version (the job is
    retried; readers keep waiting meanwhile)."""


def settle(cache: RelayCache, objects: Objects, cache_name: str, content_hash: str) -> dict[str, Any]:
    """Put the cached version in S3 and say so in its record; nothing to do when it settled already."""
    started = time.perf_counter()
    record = objects.get(content_hash)
    if record is None or "settling" not in record:  # settled by an earlier run, or reclaimed since
        cache.settled(cache_name, content_hash)
        return {"settled": False}
    if not cache.is_ready(cache_name, content_hash):
        raise SettleFailed(f"version {content_hash} is not in the relay cache as {cache_name}")
    store, size = ObjectWriter(objects.s3, objects.bucket, content.object_key(content_hash)), 0
    try:
        with open(cache.path(cache_name), "rb") as f:
            while piece := f.read(content.PART_SIZE):
                store.write(piece)
                size += len(piece)
        if store.content_hash() != content_hash:
            raise SettleFailed(f"the cached copy of {content_hash} is not that version")
        store.complete()
    except BaseException:
        store.abort()
        raise
    objects.settled(content_hash)
    cache.settled(cache_name, content_hash)  # evictable from here: its size was counted above
    return {"settled": True, "size": size, "seconds": time.perf_counter() - started}


def settle_late(
    cache: RelayCache, objects: Callable[[], Objects], now: float, late_s: float = LATE_S
) -> list[str]:
    """Settle every cached version still settling `late_s` after it was kept; the names settled.
    `objects` is made only when one is late (an upkeep at a data instance has no table)."""
    late = [(name, h) for name, h, kept in cache.settling() if now - kept >= late_s]
    if not late:
        return []
    records = objects()
    return [name for name, h in late if settle(cache, records, name, h)["settled"]]
