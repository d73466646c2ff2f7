"""Apply a delta to the old file, streaming, and verify the result against the delta's sha256."""

from __future__ import annotations

import hashlib
from typing import BinaryIO

import zstandard

from .errors import DeltaFormatError, DeltaMismatch
from .wire import (
    DELTA_HEADER,
    DELTA_MAGIC,
    OP_COPY,
    OP_END,
    OP_LITERAL,
    SHA256_LEN,
    VERSION,
    StreamParser,
    unzigzag,
)

_IO_CHUNK = 1 << 20


def patch(old: BinaryIO, delta: BinaryIO, out: BinaryIO) -> int:
    """Write the new file to `out`; returns its size.

    `old` must be seekable. On DeltaMismatch `out` already holds wrong bytes: write to a temporary
    file and rename only on success (sync.fetch_and_patch does this for callers).
    """
    reader = zstandard.ZstdDecompressor().stream_reader(delta, closefd=False)
    try:
        return _apply(old, StreamParser(reader), out)
    except zstandard.ZstdError as exc:
        raise DeltaFormatError(f"delta does not decompress: {exc}") from exc


def _apply(old: BinaryIO, parser: StreamParser, out: BinaryIO) -> int:
    magic, version, flags, block_size, old_size = DELTA_HEADER.unpack(parser.read_exact(DELTA_HEADER.size))
    if magic != DELTA_MAGIC:
        raise DeltaFormatError("not a delta (bad magic)")
    if version != VERSION or flags:
        raise DeltaFormatError(f"unsupported delta version {version} / flags {flags:#x}")
    if block_size < 1:
        raise DeltaFormatError("bad block size 0")
    actual_old = old.seek(0, 2)
    if actual_old != old_size:
        raise DeltaMismatch(f"old file is {actual_old} bytes, the signature was made from {old_size}")
    sha = hashlib.sha256()
    written = 0
    expected = 0
    while True:
        op = parser.read_byte()
        if op == OP_LITERAL:
            written += _copy_literal(parser, parser.read_varint(), out, sha)
        elif op == OP_COPY:
            start = expected + unzigzag(parser.read_varint())
            count = parser.read_varint()
            if start < 0 or count < 1 or start * block_size >= old_size:
                raise DeltaFormatError(f"copy of blocks {start}+{count} outside the old file")
            expected = start + count
            offset = start * block_size
            written += _copy_old(old, offset, min(count * block_size, old_size - offset), out, sha)
        elif op == OP_END:
            size = parser.read_varint()
            digest = parser.read_exact(SHA256_LEN)
            if not parser.at_eof():
                raise DeltaFormatError("trailing bytes after the end of the delta")
            _verify(size, digest, written, sha.digest())
            return written
        else:
            raise DeltaFormatError(f"unknown delta op {op:#x}")


def _copy_literal(parser: StreamParser, n: int, out: BinaryIO, sha) -> int:
    left = n
    while left:
        data = parser.read_exact(min(left, _IO_CHUNK))
        sha.update(data)
        out.write(data)
        left -= len(data)
    return n


def _copy_old(old: BinaryIO, offset: int, n: int, out: BinaryIO, sha) -> int:
    old.seek(offset)
    left = n
    while left:
        data = old.read(min(left, _IO_CHUNK))
        if not data:
            raise DeltaMismatch("old file ended early")
        sha.update(data)
        out.write(data)
        left -= len(data)
    return n


def _verify(size: int, digest: bytes, written: int, actual: bytes) -> None:
    if size != written:
        raise DeltaMismatch(f"patched {written} bytes, the delta expects {size}")
    if digest != actual:
        raise DeltaMismatch("patched file's sha256 differs from the new file's")
