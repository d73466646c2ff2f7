"""Version-aware delta: zstd with the old version as a prefix ("patch-from").

When both versions are at hand (the client uploading a new version of a file it downloaded, or
the cloud holding the version the client names by content hash), a dictionary delta beats the
rsync-style one several times over: no checksum list crosses the link and matches are found at
any offset and length.

Memory is bounded by cutting the new file into windows of WINDOW bytes; window i is compressed
against the part of the old file at the same relative position, widened by MARGIN on each side,
so peak memory is about WINDOW + 2·MARGIN + zstd's tables per window decoded at once (AHEAD),
whatever the file size.

Format v1: b"HCVD", version (u8), new size (u64), base size (u64), window (u32), margin (u32),
sha256 of the new file (32 bytes), then per window: compressed length (u32) + zstd frame.
"""

from __future__ import annotations

import hashlib
import os
import struct
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, BinaryIO

import pyzstd
import zstandard

from .errors import DeltaFormatError, DeltaMismatch

MAGIC, VERSION = b"HCVD", 1
WINDOW = 32 * 1024 * 1024
MARGIN = 8 * 1024 * 1024
LEVEL = 3
AHEAD = 2  # windows compressed or decoded at once: two cores' worth
_HEADER = struct.Struct(">4sBQQII32s")
_LEN = struct.Struct(">I")


def _dict_range(i: int, new_size: int, base_size: int, window: int, margin: int) -> tuple[int, int]:
    ratio = base_size / new_size if new_size else 1.0
    start = max(0, int(i * window * ratio) - margin)
    end = min(base_size, int((i + 1) * window * ratio) + margin)
    return start, max(start, end)


def _read_at(f: BinaryIO, offset: int, n: int) -> bytes:
    f.seek(offset)
    return f.read(n)


def _options(dict_len: int, chunk_len: int, level: int = LEVEL) -> dict[int, int]:
    window_log = max(20, min(30, (dict_len + chunk_len).bit_length()))
    return {
        pyzstd.CParameter.compressionLevel: level,
        pyzstd.CParameter.windowLog: window_log,
        pyzstd.CParameter.enableLongDistanceMatching: 1,
    }


def _prefix(raw: bytes) -> tuple[pyzstd.ZstdDict, int] | None:
    """The old bytes as a zstd prefix (what `zstd --patch-from` uses); none below zstd's 8-byte minimum."""
    return pyzstd.ZstdDict(raw, is_raw=True).as_prefix if len(raw) >= 8 else None


def encode(
    base: BinaryIO,
    base_size: int,
    new: BinaryIO,
    new_size: int,
    out: BinaryIO,
    window: int = WINDOW,
    margin: int = MARGIN,
    level: int = LEVEL,
) -> int:
    """Write the delta of `new` against `base` at zstd `level` (level.py chooses it); return its
    size in bytes. The level is the encoder's alone: `apply` reads any. Windows are compressed
    AHEAD at a time on threads of their own (zstd lets go of the GIL), written in order, while
    the next is read and hashed: a 62 MB file's two windows compress at once on two cores."""
    sha, written = hashlib.sha256(), 0
    count = -(-new_size // window) if new_size else 0
    read = _positional(base)

    def compress(i: int, chunk: bytes) -> bytes:
        start, end = _dict_range(i, new_size, base_size, window, margin)
        raw = read(start, end - start)
        options = _options(len(raw), len(chunk), level)
        return pyzstd.compress(chunk, level_or_option=options, zstd_dict=_prefix(raw))

    def emit(frame: bytes) -> int:
        out.write(_LEN.pack(len(frame)) + frame)
        return _LEN.size + len(frame)

    out.write(b"\0" * _HEADER.size)  # header last: the sha256 is known only at the end
    waiting = deque[Future[bytes]]()
    with ThreadPoolExecutor(AHEAD, thread_name_prefix="hycloud-delta-encode") as pool:
        for i in range(count):
            chunk = new.read(min(window, new_size - i * window))
            waiting.append(pool.submit(compress, i, chunk))
            sha.update(chunk)
            if len(waiting) == AHEAD:
                written += emit(waiting.popleft().result())
        while waiting:
            written += emit(waiting.popleft().result())
    out.seek(0)
    out.write(_HEADER.pack(MAGIC, VERSION, new_size, base_size, window, margin, sha.digest()))
    out.seek(0, 2)
    return _HEADER.size + written


def _decode(frame: bytes, raw: bytes, expected: int) -> bytes:
    """One window, decoded against its part of the old version as a raw-content dictionary: the
    same history a prefix gives, in one call into a buffer of the known size (about 4x faster than
    pyzstd's streaming decompression of the same frame). A frame naming another size is refused
    before anything is allocated for it."""
    try:
        declared = zstandard.frame_content_size(frame)
        if declared not in (expected, zstandard.CONTENTSIZE_UNKNOWN):
            raise DeltaFormatError("version-aware delta window has the wrong length")
        history = zstandard.ZstdCompressionDict(raw, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
        decoder = zstandard.ZstdDecompressor(
            dict_data=history if len(raw) >= 8 else None, max_window_size=2**31
        )
        chunk = decoder.decompress(frame, max_output_size=max(expected, 1))
    except zstandard.ZstdError as err:
        raise DeltaFormatError(f"corrupt version-aware delta: {err}") from err
    if len(chunk) != expected:
        raise DeltaFormatError("version-aware delta window has the wrong length")
    return chunk


def apply(base: BinaryIO, delta: BinaryIO, out: BinaryIO, check: bool = True) -> int:
    """Rebuild the new file from `base` and `delta`; verify its sha256 (unless the caller checks
    the bytes itself, `check` False: a pass over them fewer); return its size. Windows are decoded
    AHEAD at a time on threads of their own (zstd and file reads let go of the GIL), written in
    order: a 62 MB file's two windows decode at once on two cores."""
    header = delta.read(_HEADER.size)
    if len(header) != _HEADER.size:
        raise DeltaFormatError("truncated version-aware delta header")
    magic, version, new_size, base_size, window, margin, digest = _HEADER.unpack(header)
    if magic != MAGIC or version != VERSION or window <= 0:
        raise DeltaFormatError("not a version-aware delta (or an unknown version)")
    read = _positional(base)

    def decode(i: int, frame: bytes) -> bytes:
        start, end = _dict_range(i, new_size, base_size, window, margin)
        return _decode(frame, read(start, end - start), min(window, new_size - i * window))

    sha, size, waiting = hashlib.sha256() if check else None, 0, deque[Future[bytes]]()
    with ThreadPoolExecutor(AHEAD, thread_name_prefix="hycloud-delta-decode") as pool:
        for i in range(-(-new_size // window) if new_size else 0):
            waiting.append(pool.submit(decode, i, _frame(delta)))
            if len(waiting) == AHEAD:
                size += _emit(waiting.popleft().result(), out, sha)
        while waiting:
            size += _emit(waiting.popleft().result(), out, sha)
    if sha is not None and sha.digest() != digest:
        raise DeltaMismatch("version-aware delta produced bytes whose sha256 differs (wrong base?)")
    return size


def _positional(f: BinaryIO) -> Callable[[int, int], bytes]:
    """Reads at an offset that threads can make at once: pread on a real file, else one at a
    time (the file's position is shared)."""
    try:
        fd = f.fileno()
    except (AttributeError, OSError, ValueError):
        fd = -1
    if fd >= 0:
        return lambda offset, n: _pread(fd, n, offset)
    lock = threading.Lock()

    def read(offset: int, n: int) -> bytes:
        with lock:
            return _read_at(f, offset, n)

    return read


def _pread(fd: int, n: int, offset: int) -> bytes:
    parts = []
    while n > 0 and (piece := os.pread(fd, n, offset)):
        parts.append(piece)
        n, offset = n - len(piece), offset + len(piece)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _frame(delta: BinaryIO) -> bytes:
    raw_len = delta.read(_LEN.size)
    if len(raw_len) != _LEN.size:
        raise DeltaFormatError("truncated version-aware delta")
    return delta.read(_LEN.unpack(raw_len)[0])


def _emit(chunk: bytes, out: BinaryIO, sha: Any) -> int:
    out.write(chunk)  # first: a writer that hashes in a thread of its own works beside the sha256
    if sha is not None:
        sha.update(chunk)
    return len(chunk)
