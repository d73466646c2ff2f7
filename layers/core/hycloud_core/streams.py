"""Stream helpers shared by the codecs."""

from __future__ import annotations

from typing import BinaryIO


def read_full(src: BinaryIO, size: int) -> bytes:
    """Up to `size` bytes, looping over short reads (pipes, sockets); fewer only at end of stream."""
    data = src.read(size)
    if not data or len(data) == size:
        return data or b""
    parts, got = [data], len(data)
    while got < size:
        more = src.read(size - got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)
