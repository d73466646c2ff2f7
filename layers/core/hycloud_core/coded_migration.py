"""Moving coded blocks after the ring changed (an instance added or removed), as few as possible.

For each chunk the new placement is `HashRing(new regions).place(chunk key, n)`; `ring.migrate`
keeps every block whose instance is still among the chunk's targets and sends only the others to
the target instances left over. A moved block is copied (or rebuilt from k others when its old
instance is gone), checked against its sha256 and written before the layout names its new home;
the old copy is deleted only after the caller stored the new layout.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from .coded_layout import CodedLayout
from .coded_repair import rebuild_block
from .fs.blocks import BlockStore
from .placement.ring import HashRing, migrate


@dataclass
class Migration:
    layout: CodedLayout
    moved: int = 0
    kept: int = 0
    stale: list[tuple[str, str]] = field(default_factory=list)  # (region, block hash) to delete after


def migrate_layout(layout: CodedLayout, regions: list[str], store: BlockStore) -> Migration:
    """Copy the blocks the new ring moves; returns the new layout and the copies left to delete."""
    ring = HashRing(regions)
    result = Migration(layout)
    for ci, chunk in enumerate(layout.chunks):
        current = [b.instance for b in chunk.blocks]
        target = migrate(current, ring.place(chunk.key, layout.n))
        for bi, (block, home) in enumerate(zip(chunk.blocks, target, strict=True)):
            if home == block.instance:
                result.kept += 1
                continue
            data = store.get(block.instance, block.hash) if block.instance in store.buckets else None
            if data is None or hashlib.sha256(data).hexdigest() != block.hash:
                data = rebuild_block(layout, ci, bi, store)
            if data is None:
                raise RuntimeError(f"block {bi} of chunk {ci} cannot be read or rebuilt")
            store.put(home, block.hash, data)
            result.stale.append((block.instance, block.hash))
            block.instance = home
            result.moved += 1
    layout.instances = sorted(regions)
    return result
