"""Content-defined chunking of plaintext (FastCDC): boundaries follow content, not offsets.

An edit moves only the boundaries next to it, so a new version of a file shares every other
chunk with the old one and only those near the edit are sent. Bounds: min 16 KiB, average
64 KiB, max 256 KiB. The compiled FastCDC of the `fastcdc` package runs at several hundred MB/s;
its pure-Python twin (same boundaries) is the fallback where the extension is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

KiB = 1024
MIN, AVG, MAX = 16 * KiB, 64 * KiB, 256 * KiB


def _engine() -> Callable[..., Iterator[Any]]:
    try:
        from fastcdc.fastcdc_cy import fastcdc_cy  # type: ignore[import-untyped]

        return fastcdc_cy  # type: ignore[no-any-return]
    except ImportError:  # pragma: no cover - the wheel ships the extension
        from fastcdc.fastcdc_py import fastcdc_py  # type: ignore[import-untyped]

        return fastcdc_py  # type: ignore[no-any-return]


def boundaries(
    data: bytes | memoryview, min_size: int = MIN, avg: int = AVG, max_size: int = MAX
) -> list[tuple[int, int]]:
    """(offset, length) of each chunk of `data`, in order; one empty list for empty data."""
    if not data:
        return []
    return [(int(c.offset), int(c.length)) for c in _engine()(data, min_size, avg, max_size)]


def chunks(data: bytes, min_size: int = MIN, avg: int = AVG, max_size: int = MAX) -> Iterator[bytes]:
    view = memoryview(data)
    for offset, length in boundaries(view, min_size, avg, max_size):
        yield bytes(view[offset : offset + length])
