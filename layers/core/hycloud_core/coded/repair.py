"""Rebuilding the blocks of a lost or replaced instance from the others (seed 000 §III-B).

For every chunk with a block on the instance, the block is checked in place: its size and the
SHA-256 S3 verified on write, then its bytes read back and hashed, since an object's metadata can
outlive its bytes (a store that lost or spoiled them still reports both). A missing or damaged one
is rebuilt: k good blocks from the other
holders, decode, encode the chunk again, and the block of that index is stored only when its
sha256 is the one the layout recorded. Blocks are content-addressed, so a rebuilt block is
byte-identical to the lost one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..codec.erasure import decode_chunk, encode_chunk
from ..codec.layout import Block, CodedLayout
from ..fs.blocks import BROKEN_READ, STORED, BlockStore

CHECKED_AT_ONCE = 64  # blocks of a file checked together: their HEADs, then their bytes, a batch each


@dataclass
class RepairCount:
    checked: int = 0
    rebuilt: int = 0
    unrecoverable: int = 0

    def add(self, other: RepairCount) -> None:
        self.checked += other.checked
        self.rebuilt += other.rebuilt
        self.unrecoverable += other.unrecoverable


def _good_blocks(layout: CodedLayout, ci: int, store: BlockStore, skip: str) -> list[bytes]:
    """Up to k blocks of a chunk from instances other than `skip`, each matching its hash."""
    found = []
    for block in layout.chunks[ci].blocks:
        if block.instance == skip:
            continue
        try:
            data = store.get(block.instance, block.hash)
        except BROKEN_READ:
            continue  # a holder whose bytes cannot be read whole is no source
        if data is not None and hashlib.sha256(data).hexdigest() == block.hash:
            found.append(data)
            if len(found) == layout.k:
                break
    return found


def rebuild_block(layout: CodedLayout, ci: int, bi: int, store: BlockStore) -> bytes | None:
    """Block `bi` of chunk `ci` rebuilt from the other instances, or None when it cannot be."""
    target = layout.chunks[ci].blocks[bi]
    blocks = _good_blocks(layout, ci, store, target.instance)
    if len(blocks) < layout.k:
        return None
    chunk = decode_chunk(blocks)
    block = encode_chunk(chunk, ci, layout.n, layout.k)[bi]
    return block if hashlib.sha256(block).hexdigest() == target.hash else None


def repair_file(layout: CodedLayout, region: str, store: BlockStore) -> RepairCount:
    """Check, and where needed rebuild, every block of the file that lives on `region`."""
    count = RepairCount()
    homes = [
        (ci, bi, b)
        for ci, c in enumerate(layout.chunks)
        for bi, b in enumerate(c.blocks)
        if b.instance == region
    ]
    for start in range(0, len(homes), CHECKED_AT_ONCE):
        batch = homes[start : start + CHECKED_AT_ONCE]
        count.checked += len(batch)
        intact = _intact(region, [b for _, _, b in batch], store)
        for (ci, bi, block), ok in zip(batch, intact, strict=True):
            if ok:
                continue
            rebuilt = rebuild_block(layout, ci, bi, store)
            if rebuilt is None:
                count.unrecoverable += 1
                continue
            store.put(region, block.hash, rebuilt)
            count.rebuilt += 1
    return count


def _intact(region: str, blocks: list[Block], store: BlockStore) -> list[bool]:
    """BlockStore.verified() of many blocks of one region: their metadata, then their bytes."""
    states = store.states(region, [(b.hash, b.size) for b in blocks])
    stored = [b for b, s in zip(blocks, states, strict=True) if s == STORED]
    try:
        read = dict(
            zip(
                (b.hash for b in stored),
                store.get_many(region, [(b.hash, b.size) for b in stored]),
                strict=True,
            )
        )
    except BROKEN_READ:  # a body cut short: each is read again on its own
        return [store.verified(region, b.hash, b.size) for b in blocks]
    return [
        (d := read.get(b.hash)) is not None and len(d) == b.size and hashlib.sha256(d).hexdigest() == b.hash
        for b in blocks
    ]
