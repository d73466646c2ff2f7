"""A coded file made whole again from k blocks per chunk, the job's own instance first.

A relay job copies a large file into its EFS cache before it serves ranges; for a coded file
there is no object to copy, so it decodes each chunk from k verified blocks (those in its own
region first: no inter-region transfer when it holds k) and checks each chunk's sha256; the
caller checks the whole against the content hash before publishing it.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import BinaryIO

from .codec.erasure import decode_chunk
from .coded_layout import Chunk, CodedLayout
from .content import PartHasher
from .errors import ConflictError
from .fs.blocks import BlockStore


def _k_blocks(chunk: Chunk, k: int, store: BlockStore, own: str, tally: Counter) -> list[bytes]:
    found = []
    for block in sorted(chunk.blocks, key=lambda b: b.instance != own):
        data = store.get(block.instance, block.hash) if block.instance in store.buckets else None
        if data is not None and hashlib.sha256(data).hexdigest() == block.hash:
            found.append(data)
            tally[block.instance] += 1
            if len(found) == k:
                break
    return found


def reassemble(
    layout: CodedLayout, store: BlockStore, own: str, out: BinaryIO, tally: Counter | None = None
) -> tuple[str, int]:
    """Write the file to `out`; answer its content hash and size. `tally` counts the blocks read
    from each instance (what a job reports of where its bytes came from)."""
    hasher, size, tally = PartHasher(), 0, Counter() if tally is None else tally
    for ci, chunk in enumerate(layout.chunks):
        blocks = _k_blocks(chunk, layout.k, store, own, tally)
        piece = decode_chunk(blocks) if len(blocks) == layout.k else b""
        if hashlib.sha256(piece).hexdigest() != chunk.key:
            raise ConflictError(f"chunk {ci} cannot be rebuilt from its blocks", code="blocks-lost")
        out.write(piece)
        hasher.update(piece)
        size += len(piece)
    return hasher.hexdigest(), size
