"""Convenience entry points: bytes in/bytes out, and the verify-and-retry download path."""

from __future__ import annotations

import io
import tempfile
from collections.abc import Callable
from typing import BinaryIO, cast

from . import rolling
from .encoder import DEFAULT_LEVEL, DeltaStats, delta
from .errors import DeltaMismatch
from .patcher import patch
from .signature import Signature, compute
from .wire import VERSION

SPOOL_BYTES = 8 << 20


def signature(old: BinaryIO, block_size: int, strong_len: int | None = None) -> bytes:
    """Wire-form checksum list of `old` (strong_len None: rsync's length rule for the file's size)."""
    return compute(old, block_size, strong_len).encode()


def signature_bytes(old: bytes, block_size: int, strong_len: int | None = None) -> bytes:
    return compute(io.BytesIO(old), block_size, strong_len, size_hint=len(old)).encode()


def delta_bytes(
    sig: bytes | Signature, new: bytes, level: int = DEFAULT_LEVEL, version: int = VERSION
) -> bytes:
    out = io.BytesIO()
    delta(sig, io.BytesIO(new), out, level, version=version)
    return out.getvalue()


def patch_bytes(old: bytes, delta_data: bytes) -> bytes:
    out = io.BytesIO()
    patch(io.BytesIO(old), io.BytesIO(delta_data), out)
    return out.getvalue()


DeltaSource = Callable[[bytes, BinaryIO], object]
"""Given a wire signature, write the matching compressed delta into the stream (a relay call)."""


def fetch_and_patch(
    old: BinaryIO,
    block_size: int,
    fetch_delta: DeltaSource,
    out: BinaryIO,
    strong_len: int | None = None,
) -> int:
    """Download-side flow: signature, delta, patch; on a hash mismatch retry once with full-length
    strong sums. Returns the number of attempts (1 or 2). `out` must be seekable and truncatable;
    it holds the new file only when this returns."""
    lengths = [strong_len, rolling.FULL_STRONG_LEN]
    if strong_len == rolling.FULL_STRONG_LEN:
        lengths = lengths[:1]
    for attempt, length in enumerate(lengths, start=1):
        old.seek(0)
        sig = signature(old, block_size, length)
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
            stream = cast(BinaryIO, spool)  # a binary file (in memory, then on disk)
            fetch_delta(sig, stream)
            spool.seek(0)
            out.seek(0)
            out.truncate()
            try:
                patch(old, stream, out)
                return attempt
            except DeltaMismatch:
                if attempt == len(lengths):
                    raise
    raise AssertionError("unreachable")


def local_delta_source(new: BinaryIO, level: int = DEFAULT_LEVEL) -> DeltaSource:
    """A DeltaSource over a local stream (tests, upload path, background gamma computation)."""

    def source(sig: bytes, sink: BinaryIO) -> DeltaStats:
        new.seek(0)
        return delta(sig, new, sink, level)

    return source
