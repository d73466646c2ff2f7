"""Where the blocks of an erasure-coded large file live: the `erasure` entry of its link file.

A coded file is cut into chunks, each chunk into n framed blocks (codec/erasure.py) of which any
k rebuild it. Block i of a chunk goes to the i-th instance the placement ring names for the
chunk's sha256, under the key `blocks/<sha256 of the framed block>` in that instance's bucket:
the same block bytes always get the same key and instance, so blocks dedup like whole files do.

Layout document (JSON, kept in the link file)::

    {"n": 3, "k": 2, "chunk_size": 2097152, "instances": ["eu-west-1", ...],
     "chunks": [{"length": 2097152, "key": "<sha256 of the chunk>",
                 "blocks": [{"hash": "<sha256 of the block>", "size": 1048636,
                             "instance": "us-west-2"}, ...]}, ...],
     "merkle": "<eq. 10 hash, hex>"}
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import BadRequestError
from ..merkle.hashing import file_hash
from ..placement.ring import HashRing
from .framing import HEADER_SIZE, MAX_BLOCKS

BLOCK_PREFIX = "blocks/"
MIN_CODED_INSTANCES = 3
MAX_CHUNKS = 100_000
# Presigned URLs one answer holds (upload start, download plan); the rest come page by page, so an
# answer stays near 1 MB (a URL carrying a session token is about 1 KB) under Lambda's 6 MB.
URL_PAGE = 1000
# Blocks a commit HEADs itself (a few seconds); a larger layout is verified before, page by page.
COMMIT_CHECKS = 300
# A block's payload at most: functions in the VPC read and write other regions' blocks through the
# reach function, whose answer holds reach.MAX_BODY bytes (Lambda's 6 MB payload, base64).
MAX_BLOCK_PAYLOAD = 4 * 1024 * 1024
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def block_key(block_hash: str) -> str:
    return f"{BLOCK_PREFIX}{block_hash}"


@dataclass
class Block:
    hash: str
    size: int
    instance: str = ""


@dataclass
class Chunk:
    length: int
    key: str
    blocks: list[Block]


@dataclass
class CodedLayout:
    n: int
    k: int
    chunk_size: int
    chunks: list[Chunk]
    instances: list[str] = field(default_factory=list)
    merkle: str = ""

    @property
    def size(self) -> int:
        return sum(c.length for c in self.chunks)

    @property
    def block_count(self) -> int:
        return sum(len(c.blocks) for c in self.chunks)

    def block_hashes(self) -> list[bytes]:
        return [bytes.fromhex(b.hash) for c in self.chunks for b in c.blocks]

    def stored_bytes(self) -> dict[str, int]:
        """Bytes of blocks per instance: what each region stores for this file."""
        out: dict[str, int] = {}
        for chunk in self.chunks:
            for block in chunk.blocks:
                out[block.instance] = out.get(block.instance, 0) + block.size
        return out

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> CodedLayout:
        chunks = [
            Chunk(int(c["length"]), str(c["key"]), [Block(**b) for b in c["blocks"]]) for c in doc["chunks"]
        ]
        return cls(
            int(doc["n"]),
            int(doc["k"]),
            int(doc["chunk_size"]),
            chunks,
            list(doc.get("instances", [])),
            str(doc.get("merkle", "")),
        )


def check_code(n: int, k: int, instances: int) -> None:
    """RS(n, k) with 3 <= n <= N and 2 <= k < n; with N < 3 replication (n = N, k = 1)."""
    if instances < MIN_CODED_INSTANCES:
        if (n, k) != (instances, 1):
            raise BadRequestError(
                f"with {instances} instance(s) a file is replicated: n={instances}, k=1", code="bad-code"
            )
        return
    if not (3 <= n <= min(instances, MAX_BLOCKS) and 2 <= k < n):
        raise BadRequestError(f"need 3 <= n <= {instances} and 2 <= k < n, got n={n}, k={k}", code="bad-code")


def _check_chunk(chunk: Chunk, index: int, layout: CodedLayout) -> None:
    last = index == len(layout.chunks) - 1
    if not (0 < chunk.length <= layout.chunk_size) or (not last and chunk.length != layout.chunk_size):
        raise BadRequestError(f"chunk {index} has a bad length {chunk.length}", code="bad-layout")
    if not _HEX64.match(chunk.key) or len(chunk.blocks) != layout.n:
        raise BadRequestError(f"chunk {index} needs a sha256 key and {layout.n} blocks", code="bad-layout")
    payload = -(-chunk.length // layout.k)
    for block in chunk.blocks:
        if not _HEX64.match(block.hash) or block.size != HEADER_SIZE + payload:
            raise BadRequestError(
                f"chunk {index}: a block needs a sha256 hash and {HEADER_SIZE + payload} bytes",
                code="bad-layout",
            )


def placed(layout: CodedLayout, size: int, regions: Sequence[str]) -> CodedLayout:
    """Check a client's layout against the file size and code, and place its blocks by the ring."""
    check_code(layout.n, layout.k, len(regions))
    if not (0 < layout.chunk_size < 2**32) or not layout.chunks or len(layout.chunks) > MAX_CHUNKS:
        raise BadRequestError("need 1..100000 chunks of a positive chunk size", code="bad-layout")
    if -(-layout.chunk_size // layout.k) > MAX_BLOCK_PAYLOAD:
        raise BadRequestError(
            f"blocks hold at most {MAX_BLOCK_PAYLOAD} bytes: use chunks of at most {MAX_BLOCK_PAYLOAD * layout.k}",
            code="bad-layout",
        )
    for index, chunk in enumerate(layout.chunks):
        _check_chunk(chunk, index, layout)
    if layout.size != size:
        raise BadRequestError(f"chunks add up to {layout.size} bytes, not {size}", code="bad-layout")
    ring = HashRing(regions)
    for chunk in layout.chunks:
        for block, region in zip(chunk.blocks, ring.place(chunk.key, layout.n), strict=True):
            block.instance = region
    layout.instances = sorted(regions)
    return layout


def merkle_hash(content_hash: str, layout: CodedLayout) -> str:
    """Eq. 10: the file rule over the content, then every block hash in chunk order."""
    return file_hash(bytes.fromhex(content_hash), layout.block_hashes()).hex()


def block_homes(layout: CodedLayout) -> Iterable[tuple[int, int, Block]]:
    """(chunk index, block index, block) for every block of the file."""
    for ci, chunk in enumerate(layout.chunks):
        for bi, block in enumerate(chunk.blocks):
            yield ci, bi, block
