"""Self-describing frame around one erasure-coded block.

Every block carries enough to be checked and placed on its own: which chunk it
belongs to, the code (n, k), its index, the padding zfec needed, and a hash over
the header and payload. A block fetched from any instance can therefore be
verified before decoding, and a bad one skipped without knowing where it came from.

Layout (big-endian, 60 bytes, then the payload)::

    magic        4s   b"HCEB"
    version      B    1
    n            B    blocks per chunk (1..255)
    k            B    blocks needed to decode (1..n)
    block_index  B    0..n-1 (0..k-1 are zfec primary blocks)
    header_len   H    60 for version 1; lets later versions grow the header
    reserved     H    0
    chunk_index  Q    position of the chunk in its file
    chunk_length I    bytes of the chunk before padding
    padding      I    zero bytes appended so the chunk splits into k equal parts (< k)
    chunk_digest 16s  xxh3-128 of the chunk; checked after decoding
    block_hash   16s  xxh3-128 of the 44 header bytes before it, then the payload

xxh3-128 rather than sha256: these hashes guard against corruption and mix-ups,
not adversaries (content addresses use sha256 elsewhere). On this hardware
xxh3-128 hashes a 2 MiB chunk in about 0.1 ms against about 1.1 ms for
sha256, which keeps framing and verification far below zfec's own cost.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import xxhash

from hycloud_core.codec.erasure_errors import (
    BadMagicError,
    CorruptBlockError,
    ErasureError,
    TruncatedBlockError,
    UnsupportedVersionError,
)

MAGIC = b"HCEB"
FORMAT_VERSION = 1
_PREFIX = struct.Struct(">4sBBBBHHQII16s")
HASH_SIZE = 16
HEADER_SIZE = _PREFIX.size + HASH_SIZE
MAX_BLOCKS = 255
MAX_CHUNK_LENGTH = 2**32 - 1


@dataclass(frozen=True, slots=True)
class BlockHeader:
    """Parsed header of one framed block."""

    n: int
    k: int
    block_index: int
    chunk_index: int
    chunk_length: int
    padding: int
    chunk_digest: bytes
    block_hash: bytes = b""
    version: int = FORMAT_VERSION

    @property
    def payload_length(self) -> int:
        return (self.chunk_length + self.padding) // self.k

    @property
    def is_primary(self) -> bool:
        return self.block_index < self.k

    def chunk_identity(self) -> tuple[int, int, int, int, int, bytes]:
        """What every block of one encoded chunk shares; blocks with different identities never mix."""
        return (self.chunk_index, self.n, self.k, self.chunk_length, self.padding, self.chunk_digest)

    def prefix_bytes(self) -> bytes:
        return _PREFIX.pack(
            MAGIC,
            self.version,
            self.n,
            self.k,
            self.block_index,
            HEADER_SIZE,
            0,
            self.chunk_index,
            self.chunk_length,
            self.padding,
            self.chunk_digest,
        )


def check_code(n: int, k: int) -> None:
    """Reject (n, k) that zfec or the header cannot represent."""
    if not (1 <= k <= n <= MAX_BLOCKS):
        raise ValueError(f"need 1 <= k <= n <= {MAX_BLOCKS}, got n={n}, k={k}")


def digest(data: bytes | memoryview) -> bytes:
    """The 16-byte hash used for chunk digests and block hashes."""
    return xxhash.xxh3_128_digest(data)


def frame_block(header: BlockHeader, payload: bytes | memoryview) -> bytes:
    """Header plus payload, with the block hash computed over both."""
    prefix = header.prefix_bytes()
    h = xxhash.xxh3_128(prefix)
    h.update(payload)
    return b"".join((prefix, h.digest(), payload))


def parse_block_header(block: bytes | memoryview) -> BlockHeader:
    """Decode and sanity-check the header; does not look at the payload or its hash."""
    if len(block) < 4 or bytes(block[:4]) != MAGIC:
        raise BadMagicError("not a HyCloud erasure block (bad magic)")
    if len(block) < HEADER_SIZE:
        raise TruncatedBlockError(f"block is {len(block)} bytes, shorter than the {HEADER_SIZE}-byte header")
    fields = _PREFIX.unpack_from(block, 0)
    _, version, n, k, index, header_len, _, chunk_index, chunk_length, padding, chunk_digest = fields
    if version != FORMAT_VERSION:
        raise UnsupportedVersionError(f"block format version {version}, this library reads {FORMAT_VERSION}")
    if header_len != HEADER_SIZE:
        raise ErasureError(f"header length {header_len} does not match version {version}")
    if not (1 <= k <= n) or index >= n:
        raise ErasureError(f"impossible code in header: n={n}, k={k}, block_index={index}")
    if padding >= k or (chunk_length + padding) % k:
        raise ErasureError(f"padding {padding} does not split a {chunk_length}-byte chunk into {k} parts")
    block_hash = bytes(block[_PREFIX.size : HEADER_SIZE])
    return BlockHeader(n, k, index, chunk_index, chunk_length, padding, chunk_digest, block_hash, version)


def open_block(block: bytes | memoryview) -> tuple[BlockHeader, memoryview]:
    """Parse the header, check length and hash, and return the payload without copying it."""
    header = parse_block_header(block)
    view = memoryview(block)
    expected = HEADER_SIZE + header.payload_length
    if len(view) != expected:
        raise TruncatedBlockError(f"block is {len(view)} bytes, header says {expected}")
    h = xxhash.xxh3_128(view[: _PREFIX.size])
    h.update(view[HEADER_SIZE:])
    if h.digest() != header.block_hash:
        raise CorruptBlockError(f"hash mismatch in block {header.block_index} of chunk {header.chunk_index}")
    return header, view[HEADER_SIZE:]
