"""Byte-level pieces of the signature and delta formats (see FORMAT.md): headers, varints, opcodes."""

from __future__ import annotations

import struct
from typing import BinaryIO

from .errors import DeltaFormatError

SIG_MAGIC = b"HYSG"
DELTA_MAGIC = b"HYDL"
VERSION = 1

# magic, version, flags, block_size, strong_len, old_size
SIG_HEADER = struct.Struct("<4sBBIBQ")
# magic, version, flags, block_size, old_size
DELTA_HEADER = struct.Struct("<4sBBIQ")

SIG_FLAG_ZSTD = 0x01

OP_END = 0x00
OP_LITERAL = 0x01
OP_COPY = 0x02

SHA256_LEN = 32


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


class StreamParser:
    """Buffered reader over a decompressed delta stream, so op parsing costs no per-byte read calls."""

    def __init__(self, src: BinaryIO, buffer_size: int = 1 << 16) -> None:
        self._src = src
        self._size = buffer_size
        self._buf = b""
        self._pos = 0

    def _fill(self, need: int) -> None:
        parts = [self._buf[self._pos :]]
        have = len(parts[0])
        while have < need:
            chunk = self._src.read(max(self._size, need - have))
            if not chunk:
                raise DeltaFormatError("delta stream truncated")
            parts.append(chunk)
            have += len(chunk)
        self._buf = b"".join(parts)
        self._pos = 0

    def read_exact(self, n: int) -> bytes:
        if len(self._buf) - self._pos < n:
            self._fill(n)
        data = self._buf[self._pos : self._pos + n]
        self._pos += n
        return data

    def read_byte(self) -> int:
        if self._pos >= len(self._buf):
            self._fill(1)
        value = self._buf[self._pos]
        self._pos += 1
        return value

    def read_varint(self) -> int:
        shift = 0
        value = 0
        while True:
            byte = self.read_byte()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise DeltaFormatError("varint too long")

    def at_eof(self) -> bool:
        if self._pos < len(self._buf):
            return False
        chunk = self._src.read(self._size)
        self._buf, self._pos = chunk, 0
        return not chunk
