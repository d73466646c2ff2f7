"""Columns of LEB128 varints decoded with numpy: a version 3 delta chunk carries its ops as columns
(FORMAT.md), so the patcher decodes thousands of them in a handful of array operations instead of
one Python call per varint."""

from __future__ import annotations

import numpy as np

from .errors import DeltaFormatError

MAX_VARINT_BYTES = 9  # 63 bits: every value fits int64, and zigzag-decoded ones too


def decode_varints(data: bytes | memoryview, count: int) -> np.ndarray:
    """The `count` unsigned varints that make up `data` exactly, as uint64."""
    raw = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(raw < 0x80)  # last byte of each varint
    if len(ends) != count or (count and ends[-1] != len(raw) - 1):
        raise DeltaFormatError(f"op column holds {len(ends)} values, the chunk says {count}")
    if not count:
        return np.zeros(0, dtype=np.uint64)
    starts = np.empty(count, dtype=np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    widths = ends - starts + 1
    if int(widths.max()) == 1:  # the usual column: every value below 128
        return raw.astype(np.uint64)
    if int(widths.max()) > MAX_VARINT_BYTES:
        raise DeltaFormatError("varint too long in an op column")
    place = np.arange(len(raw), dtype=np.int64) - np.repeat(starts, widths)
    digits = (raw & 0x7F).astype(np.uint64) << (7 * place).astype(np.uint64)
    return np.add.reduceat(digits, starts)


def unzigzag(values: np.ndarray) -> np.ndarray:
    """Signed values from zigzag-coded ones (0, 1, 2, 3, ... -> 0, -1, 1, -2, ...)."""
    v = values.astype(np.int64)
    return (v >> 1) ^ -(v & 1)
