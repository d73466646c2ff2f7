"""Reed-Solomon RS(n, k) coding of file chunks with zfec (seed 000, §III-B).

A large file is cut into chunks of the small/large threshold S̄_f (2 MiB by
default). Each chunk becomes n framed blocks, any k of which rebuild it; each
block goes to a different service instance. With fewer than three instances
erasure coding does not apply and the chunk is replicated instead, which this
module expresses as k = 1 (every block is the whole chunk) so one format and
one decoder cover both cases.

Streams are processed one chunk at a time, so memory stays at about
(n / k + 1) chunks whatever the file size.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import BinaryIO

import zfec

from hycloud_core.codec.erasure_errors import (
    CorruptBlockError,
    ErasureError,
    InconsistentBlocksError,
    NotEnoughBlocksError,
)
from hycloud_core.codec.framing import (
    MAX_CHUNK_LENGTH,
    BlockHeader,
    check_code,
    digest,
    frame_block,
    open_block,
)
from hycloud_core.constants import MiB
from hycloud_core.streams import read_full

DEFAULT_CHUNK_SIZE = 2 * MiB
DEFAULT_MAX_N = 5


def choose_params(instances: int, max_n: int = DEFAULT_MAX_N) -> tuple[int, int]:
    """Pick (n, k) for a client with `instances` service instances.

    - N < 3: replication, (N, 1): every instance holds a full copy.
    - N >= 3: n = min(N, max_n) and n - k = max(1, (n - 1) // 2) parity blocks,
      giving RS(3,2), RS(4,3), RS(5,3): storage overhead at most 5/3 while
      surviving the loss of about a third of the blocks. The paper prefers the
      smallest code to cut transfer and CPU; pass max_n=3 for its RS(3,2).
    """
    if instances < 1:
        raise ValueError("need at least one service instance")
    if max_n < 3:
        raise ValueError("max_n must be at least 3 for erasure coding to apply")
    if instances < 3:
        return instances, 1
    n = min(instances, max_n)
    return n, n - max(1, (n - 1) // 2)


@lru_cache(maxsize=64)
def _encoder(k: int, n: int) -> zfec.Encoder:
    return zfec.Encoder(k, n)


@lru_cache(maxsize=64)
def _decoder(k: int, n: int) -> zfec.Decoder:
    return zfec.Decoder(k, n)


def _split(data: bytes | memoryview, k: int) -> tuple[tuple[bytes | memoryview, ...], int]:
    """k equal parts of the chunk (the last zero-padded) and the padding length."""
    view = memoryview(data)
    size = -(-len(view) // k)
    padding = size * k - len(view)
    parts: list[bytes | memoryview] = [view[i * size : (i + 1) * size] for i in range(k)]
    for i in range(k - 1, -1, -1):  # padding may spill over several trailing parts of a tiny chunk
        if len(parts[i]) == size:
            break
        parts[i] = bytes(parts[i]) + bytes(size - len(parts[i]))
    return tuple(parts), padding


def encode_chunk(data: bytes | memoryview, chunk_index: int, n: int, k: int) -> list[bytes]:
    """The n framed blocks of one chunk; block i belongs on the i-th placed instance."""
    check_code(n, k)
    if len(data) > MAX_CHUNK_LENGTH:
        raise ValueError(f"chunk of {len(data)} bytes exceeds the format limit")
    parts, padding = _split(data, k)
    payloads = [parts[0]] * n if k == 1 else _encoder(k, n).encode(parts)
    header = BlockHeader(n, k, 0, chunk_index, len(data), padding, digest(data))
    return [frame_block(replace(header, block_index=i), payload) for i, payload in enumerate(payloads)]


@dataclass
class _Candidate:
    header: BlockHeader
    payloads: dict[int, memoryview]


def _collect(
    blocks: Iterable[bytes | memoryview], expect_digest: bytes | None
) -> tuple[_Candidate | None, int, list[str]]:
    """Read blocks until some chunk identity has k distinct good blocks; skip bad ones."""
    groups: dict[tuple[int, int, int, int, int, bytes], _Candidate] = {}
    rejected: list[str] = []
    for block in blocks:
        try:
            header, payload = open_block(block)
        except ErasureError as exc:
            rejected.append(str(exc))
            continue
        if expect_digest is not None and header.chunk_digest != expect_digest:
            rejected.append(f"block {header.block_index} belongs to another chunk version")
            continue
        group = groups.setdefault(header.chunk_identity(), _Candidate(header, {}))
        group.payloads.setdefault(header.block_index, payload)
        if len(group.payloads) >= header.k:
            return group, len(rejected), rejected
    best = max(groups.values(), key=lambda g: len(g.payloads), default=None)
    return best, len(rejected), rejected


def decode_chunk(blocks: Iterable[bytes | memoryview], expect_digest: bytes | None = None) -> bytes:
    """Rebuild a chunk from any k good blocks, skipping corrupt, truncated or foreign ones.

    Blocks are consumed lazily and reading stops at the k-th good block, so an
    iterator over downloads can be passed directly. `expect_digest` (the
    chunk digest recorded at upload) rejects blocks of a stale chunk version.
    """
    return decode_chunk_with_header(blocks, expect_digest)[1]


def decode_chunk_with_header(
    blocks: Iterable[bytes | memoryview], expect_digest: bytes | None = None
) -> tuple[BlockHeader, bytes]:
    """Like decode_chunk, also returning the header of the blocks used (chunk index, code)."""
    group, rejected, reasons = _collect(blocks, expect_digest)
    if group is None or len(group.payloads) < group.header.k:
        good = 0 if group is None else len(group.payloads)
        needed = None if group is None else group.header.k
        detail = f"; rejected: {reasons[:3]}" if reasons else ""
        raise NotEnoughBlocksError(
            f"need {needed or 'k'} distinct good blocks, got {good} ({rejected} rejected){detail}",
            needed=needed,
            good=good,
            rejected=rejected,
        )
    return group.header, _reassemble(group.header, group.payloads)


def _trim(parts: Iterable[bytes | memoryview], length: int) -> list[memoryview]:
    """Views of the parts cut to `length` bytes in total, dropping the zero padding without a copy."""
    out = []
    for part in parts:
        view = memoryview(part)[:length]
        out.append(view)
        length -= len(view)
    return out


def _reassemble(header: BlockHeader, payloads: dict[int, memoryview]) -> bytes:
    k = header.k
    chosen = sorted(payloads)[:k]
    if k == 1:
        parts = [payloads[chosen[0]]]
    elif chosen == list(range(k)):
        parts = [payloads[i] for i in chosen]
    else:
        parts = _decoder(k, header.n).decode(tuple(payloads[i] for i in chosen), tuple(chosen))
    data = b"".join(_trim(parts, header.chunk_length))
    if digest(data) != header.chunk_digest:
        raise CorruptBlockError(f"chunk {header.chunk_index} does not match its digest after decoding")
    return data


@dataclass(frozen=True)
class EncodedChunk:
    """One chunk of a file after coding: what an uploader stores and records in the link file."""

    index: int
    length: int
    key: str
    """sha256 hex of the chunk: its content address and its key on the placement ring."""
    blocks: list[bytes]


def encode_stream(
    src: BinaryIO, n: int, k: int, chunk_size: int = DEFAULT_CHUNK_SIZE
) -> Iterator[EncodedChunk]:
    """Encode a file one chunk at a time; an empty source yields no chunks."""
    check_code(n, k)
    if not (0 < chunk_size <= MAX_CHUNK_LENGTH):
        raise ValueError(f"chunk size must be in 1..{MAX_CHUNK_LENGTH}")
    index = 0
    while data := read_full(src, chunk_size):
        key = hashlib.sha256(data).hexdigest()
        yield EncodedChunk(index, len(data), key, encode_chunk(data, index, n, k))
        index += 1


def decode_stream(chunks: Iterable[Iterable[bytes | memoryview]], dst: BinaryIO) -> int:
    """Decode chunks in file order into `dst`; returns the bytes written.

    Each item of `chunks` holds the blocks of one chunk; a chunk out of order
    raises InconsistentBlocksError rather than writing a scrambled file.
    """
    written = 0
    for expected, blocks in enumerate(chunks):
        header, data = decode_chunk_with_header(blocks)
        if header.chunk_index != expected:
            raise InconsistentBlocksError(
                f"expected chunk {expected}, blocks are of chunk {header.chunk_index}"
            )
        dst.write(data)
        written += len(data)
    return written
