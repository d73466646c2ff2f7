"""Moving coded blocks after the ring changed (an instance added or removed), as few as possible.

For each chunk the new placement is `HashRing(new regions).place(chunk key, n)`; `ring.migrate`
keeps every block whose instance is still among the chunk's targets and sends only the others to
the target instances left over. A moved block is copied (or rebuilt from k others when its old
instance is gone), checked against its sha256 (S3 checks it again on write) and stored before the
link file names its new home. Old copies go only after every link file was rewritten, and only
those no link names at that instance (blocks are shared between files and users).
"""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..codec.layout import CodedLayout
from ..fs.blocks import BlockStore
from ..fs.namespace import Namespace
from ..linkfile import link_paths_under
from ..placement.ring import HashRing, migrate
from ..store.locks import passing, path_leases
from .repair import rebuild_block

_POOL = ThreadPoolExecutor(16)  # block copies wait on other regions, not the CPU


@dataclass
class Migration:
    layout: CodedLayout
    moved: int = 0
    kept: int = 0
    stale: list[tuple[str, str]] = field(default_factory=list)  # (region, block hash) to delete after


def _moved_block(layout: CodedLayout, ci: int, bi: int, store: BlockStore) -> bytes:
    block = layout.chunks[ci].blocks[bi]
    data = store.get(block.instance, block.hash) if block.instance in store.buckets else None
    if data is None or hashlib.sha256(data).hexdigest() != block.hash:
        data = rebuild_block(layout, ci, bi, store)
    if data is None:
        raise RuntimeError(f"block {bi} of chunk {ci} cannot be read or rebuilt")
    return data


def migrate_layout(layout: CodedLayout, regions: list[str], store: BlockStore) -> Migration:
    """Copy the blocks the new ring moves; returns the new layout and the copies left to delete.

    The copies run side by side (a file of many chunks moved one block at a time outlasted the
    job step's time limit); the layout names a new home only once every copy is stored."""
    ring = HashRing(regions)
    result = Migration(layout)
    moves: list[tuple[int, int, str]] = []
    for ci, chunk in enumerate(layout.chunks):
        target = migrate([b.instance for b in chunk.blocks], ring.place(chunk.key, layout.n))
        for bi, (block, home) in enumerate(zip(chunk.blocks, target, strict=True)):
            if home == block.instance:
                result.kept += 1
            else:
                moves.append((ci, bi, home))
    list(_POOL.map(lambda move: _copy_block(layout, move[0], move[1], move[2], store), moves))
    for ci, bi, home in moves:
        block = layout.chunks[ci].blocks[bi]
        result.stale.append((block.instance, block.hash))
        block.instance = home
        result.moved += 1
    layout.instances = sorted(regions)
    return result


def _copy_block(layout: CodedLayout, ci: int, bi: int, home: str, store: BlockStore) -> None:
    block = layout.chunks[ci].blocks[bi]
    if not store.has(home, block.hash, block.size):  # another file may have moved it there
        store.put(home, block.hash, _moved_block(layout, ci, bi, store))


def coded_links(namespaces_dir: str, user: str | None = None) -> list[tuple[str, str]]:
    """(user, path) of every coded link file of one user or all, sorted: a job's work list."""
    found = []
    folder = namespaces_dir if user is None else os.path.join(namespaces_dir, user)
    for host, link in link_paths_under(folder):
        if link.erasure:
            user, rest = os.path.relpath(host, namespaces_dir).split(os.sep, 1)
            found.append((user, "/" + rest.replace(os.sep, "/")))
    return sorted(found)


def migrate_link(
    namespaces_dir: str, table: Any, user: str, path: str, regions: list[str], store: BlockStore
) -> Migration | None:
    """Move one file's blocks to the new ring and rewrite its layout, under the path's lease."""
    with path_leases(table, user, [path], on_snapshot=passing):
        ns = Namespace(namespaces_dir, user)
        link = ns.current_link(path)
        if link is None or not link.erasure or sorted(link.erasure["instances"]) == sorted(regions):
            return None  # replaced, removed or already on the new ring
        result = migrate_layout(CodedLayout.from_dict(link.erasure), regions, store)
        link.erasure = result.layout.to_dict()
        ns.write_link(path, link)
        return result


def drop_moved_copies(store: BlockStore, namespaces_dir: str, before: float) -> dict[str, int]:
    """Delete the old copies: blocks a link names, but at other instances, written before `before`.

    A block no link names at all is left to the sweep (it may be an upload not committed yet)."""
    named: set[tuple[str, str]] = set()
    for _host, link in link_paths_under(namespaces_dir):
        for chunk in (link.erasure or {}).get("chunks", []):
            named.update((b["instance"], b["hash"]) for b in chunk["blocks"])
    hashes = {block_hash for _region, block_hash in named}
    deleted: dict[str, int] = {}
    for region in store.regions:
        gone = [
            block_hash
            for block_hash, written in store.listed(region)
            if block_hash in hashes and (region, block_hash) not in named and written < before
        ]
        if gone:
            store.delete_many(region, gone)
            deleted[region] = len(gone)
    return deleted
