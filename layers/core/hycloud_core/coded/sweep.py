"""Reclaiming coded blocks no link file names, in every instance's bucket.

Blocks are content-addressed and shared (dedup across files and users), so a block goes only
when no link file in any namespace lists it and it is older than the grace period: an upload
whose blocks are stored but not yet committed finishes well within it. The mark walks the link
files twice, before and after listing the buckets, so a dedup commit landing during the listing
keeps its blocks. A dedup commit between the second walk and a deletion can still lose a block
it shares with a deleted file; the chunk's other blocks remain and the repair job rebuilds it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from boto3.dynamodb.conditions import Attr

from ..fs.blocks import BlockStore
from ..linkfile import link_files_under
from ..store.collector import kept_areas
from ..store.pages import scan_items
from ..store.version_records import PREFIX as VERSION_PREFIX


@dataclass
class Sweep:
    marked: int = 0
    listed: int = 0
    deleted: dict[str, int] = field(default_factory=dict)


def linked_blocks(namespaces_dir: str) -> set[str]:
    """Every block hash a coded link file names, in every namespace, trash and snapshot (their
    only copy of the file: store/collector.py `kept_areas`), retained versions included."""
    return {b["hash"] for erasure in _layouts(namespaces_dir) for c in erasure["chunks"] for b in c["blocks"]}


def _layouts(namespaces_dir: str) -> Iterator[dict[str, Any]]:
    for folder in kept_areas(namespaces_dir):
        for link in link_files_under(folder):
            yield from [link.erasure] if link.erasure else []
            yield from link.history_erasure.values()


def version_blocks(table: Any, now: float) -> set[str]:
    """Every block hash a kept version's record names (store/version_records.py `erasure`): once
    its file is gone and its trash item emptied, the record alone keeps the version restorable.
    One scan of the table, of the version records that have a layout."""
    kept = scan_items(
        table,
        FilterExpression=Attr("pk").begins_with(VERSION_PREFIX) & Attr("erasure").exists(),
        ProjectionExpression="erasure, expires",
    )
    layouts = [i["erasure"] for i in kept if float(i.get("expires", 0)) > now]
    return {b["hash"] for erasure in layouts for c in erasure["chunks"] for b in c["blocks"]}


def sweep_blocks(
    store: BlockStore, namespaces_dir: str, grace_s: float, now: float | None = None, table: Any = None
) -> Sweep:
    """Delete unlinked blocks older than `grace_s` from every bucket: no link file names them,
    nor (with `table`) any kept version's record."""
    now = time.time() if now is None else now
    cutoff = now - grace_s

    def named() -> set[str]:
        return linked_blocks(namespaces_dir) | (version_blocks(table, now) if table is not None else set())

    marks = named()
    candidates: list[tuple[str, str]] = []
    result = Sweep()
    for region in store.regions:
        for block_hash, written in store.listed(region):
            result.listed += 1
            if block_hash not in marks and written < cutoff:
                candidates.append((region, block_hash))
    marks |= named()
    result.marked = len(marks)
    for region in store.regions:
        gone = [h for r, h in candidates if r == region and h not in marks]
        if gone:
            store.delete_many(region, gone)
            result.deleted[region] = len(gone)
    return result
