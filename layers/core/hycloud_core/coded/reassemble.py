"""A coded file made whole again from k blocks per chunk, the job's own instance first.

A relay job copies a large file into its EFS cache before it serves ranges; for a coded file
there is no object to copy, so it decodes each chunk from k verified blocks (those in its own
region first: no inter-region transfer when it holds k) and checks each chunk's sha256; the
caller checks the whole against the content hash before publishing it. The blocks of WINDOW
chunks are fetched together, a batch per region (another region's through one call of the reach
function, BlockStore.get_many), so a file of many small chunks is not a round trip per block.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from ..codec.erasure import decode_chunk
from ..codec.layout import Block, Chunk, CodedLayout
from ..content import PartHasher
from ..errors import ConflictError
from ..fs.blocks import BlockStore


class Writable(Protocol):
    """Where a file is written: an open file, or an S3 object being uploaded (ObjectWriter)."""

    def write(self, data: bytes, /) -> object: ...


WINDOW = 64


def _planned(chunk: Chunk, k: int, store: BlockStore, own: str) -> list[Block]:
    """The k blocks to read first: this instance's, then the others in layout order."""
    known = [b for b in chunk.blocks if b.instance in store.buckets]
    return sorted(known, key=lambda b: b.instance != own)[:k]


def _fetched(blocks: Sequence[Block], store: BlockStore) -> dict[str, bytes | None]:
    """The blocks' bytes by hash, each region's asked at once, the regions in parallel."""
    regions = sorted({b.instance for b in blocks})
    for region in regions:
        store.s3_for(region)  # made once, before the threads share it

    def one(region: str) -> dict[str, bytes | None]:
        mine = [b for b in blocks if b.instance == region]
        got = store.get_many(region, [(b.hash, b.size) for b in mine])
        return {b.hash: data for b, data in zip(mine, got, strict=True)}

    with ThreadPoolExecutor(max(1, len(regions))) as pool:
        return {h: d for part in pool.map(one, regions) for h, d in part.items()}


def _window_blocks(
    chunks: Sequence[Chunk], k: int, store: BlockStore, own: str, tally: Counter[str]
) -> list[list[bytes]]:
    """k verified blocks of each chunk; a chunk whose first choice falls short is searched block by block."""
    plans = [_planned(c, k, store, own) for c in chunks]
    fetched = _fetched([b for plan in plans for b in plan], store)
    found: list[list[bytes]] = []
    for chunk, plan in zip(chunks, plans, strict=True):
        good = [
            b
            for b in plan
            if (d := fetched.get(b.hash)) is not None and hashlib.sha256(d).hexdigest() == b.hash
        ]
        if len(good) == k:
            tally.update(b.instance for b in good)
            found.append([d for b in good if (d := fetched[b.hash]) is not None])
        else:
            found.append(_k_blocks(chunk, k, store, own, tally, plan, good, fetched))
    return found


def _k_blocks(
    chunk: Chunk,
    k: int,
    store: BlockStore,
    own: str,
    tally: Counter[str],
    tried: Sequence[Block] = (),
    good: Sequence[Block] = (),
    fetched: dict[str, Any] | None = None,
) -> list[bytes]:
    """k verified blocks, read one at a time; `good` of `tried` are already read and verified."""
    found = [fetched[b.hash] for b in good] if fetched else []
    tally.update(b.instance for b in good)
    for block in sorted((b for b in chunk.blocks if b not in tried), key=lambda b: b.instance != own):
        if len(found) == k:
            break
        data = store.get(block.instance, block.hash) if block.instance in store.buckets else None
        if data is not None and hashlib.sha256(data).hexdigest() == block.hash:
            found.append(data)
            tally[block.instance] += 1
    return found


def reassemble(
    layout: CodedLayout, store: BlockStore, own: str, out: Writable, tally: Counter[str] | None = None
) -> tuple[str, int]:
    """Write the file to `out`; answer its content hash and size. `tally` counts the blocks read
    from each instance (what a job reports of where its bytes came from)."""
    hasher, size, tally = PartHasher(), 0, Counter() if tally is None else tally
    for start in range(0, len(layout.chunks), WINDOW):
        window = layout.chunks[start : start + WINDOW]
        for ci, (chunk, blocks) in enumerate(
            zip(window, _window_blocks(window, layout.k, store, own, tally), strict=True), start
        ):
            piece = decode_chunk(blocks) if len(blocks) == layout.k else b""
            if hashlib.sha256(piece).hexdigest() != chunk.key:
                raise ConflictError(f"chunk {ci} cannot be rebuilt from its blocks", code="blocks-lost")
            out.write(piece)
            hasher.update(piece)
            size += len(piece)
    return hasher.hexdigest(), size
