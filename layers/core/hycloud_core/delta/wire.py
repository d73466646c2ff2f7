"""Byte-level pieces of the signature and delta formats (see FORMAT.md): headers, varints, opcodes."""

from __future__ import annotations

import struct
from typing import BinaryIO

import xxhash

from ..streams import read_full
from .errors import DeltaFormatError

SIG_MAGIC = b"HYSG"
DELTA_MAGIC = b"HYDL"
SIG_VERSION = 1
VERSION = 3  # of the delta that is written: ops in columnar chunks (FORMAT.md)
STREAM_VERSION = 2  # still read: ops interleaved with literal bytes, END with XXH3-128 (1: sha256)

# magic, version, flags, block_size, strong_len, old_size
SIG_HEADER = struct.Struct("<4sBBIBQ")
# magic, version, flags, block_size, old_size
DELTA_HEADER = struct.Struct("<4sBBIQ")

SIG_FLAG_ZSTD = 0x01

OP_END = 0x00
OP_LITERAL = 0x01
OP_COPY = 0x02

DIGEST_LEN = 16


def result_hash() -> xxhash.xxh3_128:
    """The whole-file check in END: XXH3-128 (rsync's whole-file checksum since 3.2), not sha256.

    It guards against a wrong block let through by a short strong sum, which needs no cryptographic
    hash (whoever writes a delta writes its check too); at about 30 GB/s against sha256's 2 it keeps
    patching as cheap as copying.
    """
    return xxhash.xxh3_128()


def put_varint(value: int, out: bytearray) -> None:
    """Append an unsigned LEB128 varint."""
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def zigzag(value: int) -> int:
    return (value << 1) if value >= 0 else ((-value) << 1) - 1


def unzigzag(value: int) -> int:
    return (value >> 1) if not value & 1 else -((value + 1) >> 1)


def read_exact(src: BinaryIO, n: int) -> bytes:
    """Exactly n bytes of a (decompressed) delta, or DeltaFormatError."""
    data = read_full(src, n)
    if len(data) != n:
        raise DeltaFormatError("delta stream truncated")
    return data


def read_varint(src: BinaryIO) -> int:
    """One unsigned LEB128 varint, a byte at a time (only chunk headers are read this way)."""
    value = shift = 0
    while True:
        byte = src.read(1)
        if not byte:
            raise DeltaFormatError("delta stream truncated")
        value |= (byte[0] & 0x7F) << shift
        if byte[0] < 0x80:
            return value
        shift += 7
        if shift > 63:
            raise DeltaFormatError("varint too long")
