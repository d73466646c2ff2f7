"""Apply a delta to the old file, streaming, and verify the result against the hash in the delta.

Why it is built this way: a delta over a source tree is thousands of short ops, and librsync's
patch costs a few nanoseconds per op, so a Python loop over ops (a microsecond each) cannot keep
up. A version 3 delta carries each chunk's ops in columns (FORMAT.md): numpy decodes them and
computes every op's source range at once (copies: a byte range of the old file; literals: of the
chunk's literal bytes). When the output is a file, the ops go to the kernel as they are, up to
1,024 per writev, so no byte is copied in user space but by the decompressor; where native.c is
built, that loop and the check's (XXH3, xxHash's own code) run in C, a call per chunk: at 512-byte
blocks a delta is tens of thousands of ops, and a Python slice and hash update per op made the
patch up to 1.4x slower (bench/results/patch_floor.md). Without it, a list comprehension slices
them. Three threads share the work, each releasing the GIL for its heavy part:
a reader decompresses and parses the chunks a few ahead (`_ChunkReader`; most of the time where
the new file is mostly literals), a hasher computes the whole-file check (`_Hasher`; XXH3 over
every byte), and the caller's thread writes (most of the time where the new file is mostly
copies). On two cores the check and the decompression overlap the writes instead of adding to
them (bench/results/delta.md). The old file is memory-mapped, so a copy is read straight
from the page cache (no read call, no window to refill when copies jump around, as they do in a tar
whose members moved). Other outputs (a BytesIO) get the slices gathered into writes of about 1 MiB.
Memory: four chunks' literals (1 MiB each as written) and their op columns, whatever the file
sizes; the mapping is the page cache's.

What is left is the floor of any patch of a compressed delta: zstd decompression (about 1 GB/s on
a 2.3 GHz core) and the kernel's copy into the output file. Where most of the new file is literals
(large blocks over many scattered edits), decompression alone costs nearly `rdiff patch`'s whole
time, which reads an uncompressed delta (bench/results/delta.md, column "unzstd alone / rdiff
patch").
Version 2 deltas are applied by patcher_v2.py.
"""

from __future__ import annotations

import errno
import io
import mmap
import os
import queue
import shutil
import stat
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Any, BinaryIO

import numpy as np
import zstandard

from . import patcher_v2
from .columns import decode_varints, unzigzag
from .compiled import ffi, lib
from .errors import DeltaFormatError, DeltaMismatch
from .wire import (
    DELTA_HEADER,
    DELTA_MAGIC,
    DIGEST_LEN,
    OP_COPY,
    OP_LITERAL,
    STREAM_VERSION,
    VERSION,
    read_exact,
    read_varint,
    result_hash,
)

_GATHER = 1 << 20  # output gathered per write
_DIRECT = 1 << 16  # an op this long is written as it is, without a copy into the gather buffer
_MAX_CHUNK_OPS = 1 << 20
_MAX_CHUNK_LITERALS = 1 << 24
_IOV = min(os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024, 1024)  # slices per writev


def patch(old: BinaryIO, delta: BinaryIO, out: BinaryIO) -> int:
    """Write the new file to `out`; returns its size.

    `old` must be seekable, and a file must not be truncated while it is patched from (it is
    mapped: pages cut off under the mapping fault). On DeltaMismatch `out` already holds wrong
    bytes: write to a temporary file and rename only on success (sync.fetch_and_patch does this).
    """
    reader = zstandard.ZstdDecompressor().stream_reader(delta, closefd=False)
    try:
        version, block_size, old_size = _header(read_exact(reader, DELTA_HEADER.size))
        actual_old = old.seek(0, 2)
        if actual_old != old_size:
            raise DeltaMismatch(f"old file is {actual_old} bytes, the signature was made from {old_size}")
        if version == STREAM_VERSION:
            return patcher_v2.apply(old, reader, block_size, old_size, out)
        with _mapped(old, old_size) as old_view:
            return _apply(reader, block_size, old_size, old_view, out)
    except zstandard.ZstdError as exc:
        raise DeltaFormatError(f"delta does not decompress: {exc}") from exc


def _header(raw: bytes) -> tuple[int, int, int]:
    magic, version, flags, block_size, old_size = DELTA_HEADER.unpack(raw)
    if magic != DELTA_MAGIC:
        raise DeltaFormatError("not a delta (bad magic)")
    if version not in (VERSION, STREAM_VERSION) or flags:
        raise DeltaFormatError(f"unsupported delta version {version} / flags {flags:#x}")
    if block_size < 1:
        raise DeltaFormatError("bad block size 0")
    return version, block_size, old_size


@contextmanager
def _mapped(old: BinaryIO, size: int) -> Iterator[memoryview]:
    """The old file as one read-only buffer: mapped when it is a file, the buffer of a BytesIO;
    any other stream is copied to a temporary file and mapped, and what cannot be mapped is read."""
    if size == 0:
        yield memoryview(b"")
        return
    if isinstance(old, io.BytesIO):
        # its bytes, not getbuffer(): unchanged since made from bytes, a BytesIO hands them out
        # without a copy, and a getbuffer() view caught in a traceback cycle crashes CPython
        # 3.12.1's garbage collector when the cycle is collected
        yield memoryview(old.getvalue())
        return
    mapping = _map(old)
    if mapping is None and not _has_fileno(old):
        with tempfile.TemporaryFile() as spill:
            old.seek(0)
            shutil.copyfileobj(old, spill, 1 << 20)
            spill.flush()
            mapping = _map(spill)
            if mapping is not None:
                with _view(mapping, size) as view:
                    yield view
                return
    if mapping is None:
        old.seek(0)
        yield memoryview(old.read(size))
        return
    with _view(mapping, size) as view:
        yield view


@contextmanager
def _view(mapping: mmap.mmap, size: int) -> Iterator[memoryview]:
    try:
        with memoryview(mapping) as view:
            yield view[:size]
    finally:
        try:
            mapping.close()
        except BufferError:  # a slice still held by an exception's frames: unmapped when collected
            pass


def _has_fileno(f: BinaryIO) -> bool:
    try:
        f.fileno()
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        return False
    return True


def _map(f: BinaryIO) -> mmap.mmap | None:
    """Read-only mapping, its pages mapped as copies touch them (a fault maps the 64 KiB around it).
    Mapping the whole file up front (MAP_POPULATE) cost more where most of the output is literals."""
    try:
        return mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        return None


def _apply(src: BinaryIO, block_size: int, old_size: int, old: memoryview, out: BinaryIO) -> int:
    written = 0
    sink = _sink(out)
    with _ChunkReader(src, block_size, old_size, old) as chunks, _Hasher(chunks.done) as hasher:
        for chunk in chunks:
            hasher.put(chunk)
            written += sink.put(chunk)
            chunks.done(chunk)
        size, digest = chunks.trailer
        patcher_v2.verify(size, digest, written, hasher.digest())
    return written


@dataclass
class _Chunk:
    kinds: np.ndarray
    lo: np.ndarray  # op k's bytes are [lo[k], hi[k]) of the old file (a copy) or of `literals`
    hi: np.ndarray
    old: memoryview
    literals: memoryview  # of `buffer`
    buffer: bytearray
    holders: int = 2  # the writer and the hasher: the buffer is free when both are done with it

    @cached_property
    def parts(self) -> list[memoryview]:
        """The output's slices, in order (where the compiled loops are not built, or not a file)."""
        return _slices(self.kinds, self.lo, self.hi, self.old, self.literals)

    @property
    def lengths(self) -> np.ndarray:
        lengths: np.ndarray = self.hi - self.lo
        return lengths

    def native(self) -> tuple[Any, ...]:
        """The ops as native.c's per-op loops take them."""
        u8, i64 = "uint8_t[]", "int64_t[]"
        kinds, lo, hi = (
            ffi.from_buffer(u8, self.kinds),
            ffi.from_buffer(i64, self.lo),
            ffi.from_buffer(i64, self.hi),
        )
        return (
            kinds,
            lo,
            hi,
            len(self.kinds),
            OP_COPY,
            ffi.from_buffer(u8, self.old),
            ffi.from_buffer(u8, self.literals),
        )


class _NativeCheck:
    """The whole-file XXH3-128, as wire.result_hash computes it, updated a chunk's ops per call."""

    def __init__(self) -> None:
        self._state = ffi.gc(lib.hc_hash_new(), lib.hc_hash_free)
        if self._state == ffi.NULL:
            raise MemoryError("no memory for the patch's check")

    def add(self, chunk: _Chunk) -> None:
        lib.hc_hash_ops(self._state, *chunk.native())

    def digest(self) -> bytes:
        out = ffi.new("uint8_t[16]")
        lib.hc_hash_digest(self._state, out)
        return bytes(out)


class _PyCheck:
    def __init__(self) -> None:
        self._check = result_hash()

    def add(self, chunk: _Chunk) -> None:
        deque(map(self._check.update, chunk.parts), maxlen=0)

    def digest(self) -> bytes:
        return self._check.digest()


def _new_check() -> _NativeCheck | _PyCheck:
    return _PyCheck() if lib is None else _NativeCheck()


class _Hasher:
    """The whole-file check, on a thread of its own, chunk after chunk in order. XXH3 releases the
    GIL: where the new file is mostly copies the reader has little to do and the writer much, and
    hashing on either would add to its time; here it overlaps both."""

    def __init__(self, release: Callable[[_Chunk], None]) -> None:
        self._check = _new_check()
        self._release = release
        self._todo: queue.SimpleQueue[_Chunk | None] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="delta-hash", daemon=True)

    def __enter__(self) -> _Hasher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._todo.put(None)
        self._thread.join()

    def put(self, chunk: _Chunk) -> None:
        self._todo.put(chunk)

    def digest(self) -> bytes:
        self._todo.put(None)
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._check.digest()

    def _run(self) -> None:
        """Every chunk is released, even after a failure: the reader waits for their buffers."""
        while (chunk := self._todo.get()) is not None:
            try:
                if self._error is None:
                    self._check.add(chunk)
            except BaseException as exc:  # raised by digest(), in the caller's thread
                self._error = exc
            finally:
                self._release(chunk)


class _ChunkReader:
    """The delta's chunks, decompressed, parsed and resolved into slices of the old file and of the
    literals by a thread of their own, one to three chunks ahead of the writing: zstd releases the
    GIL, so on two cores decompression (the larger share where the new file is mostly literals)
    overlaps the writes instead of adding to them. Literal buffers go round a pool of four (fresh
    ones cost a page fault per 4 KiB)."""

    _POOL = 4

    def __init__(self, src: BinaryIO, block_size: int, old_size: int, old: memoryview) -> None:
        self._src = src
        self._block_size = block_size
        self._old_size = old_size
        self._n_blocks = -(-old_size // block_size)
        self._old = old
        self._expected = 0  # block after the previous copy, carried across chunks
        self._lock = threading.Lock()
        self._ready: queue.SimpleQueue[_Chunk | BaseException | None] = queue.SimpleQueue()
        self._free: queue.SimpleQueue[bytearray | None] = queue.SimpleQueue()
        for _ in range(self._POOL):
            self._free.put(bytearray())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="delta-chunks", daemon=True)
        self.trailer: tuple[int, bytes] = (0, b"")

    def __enter__(self) -> _ChunkReader:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._free.put(None)  # wakes a reader waiting for a buffer
        self._thread.join()

    def __iter__(self) -> Iterator[_Chunk]:
        while True:
            item = self._ready.get()
            if isinstance(item, BaseException):
                raise item
            if item is None:
                return
            yield item

    def done(self, chunk: _Chunk) -> None:
        """The writer or the hasher is done with the chunk; after both, its buffer takes another."""
        with self._lock:
            chunk.holders -= 1
            free = chunk.holders == 0
        if free:
            self._free.put(chunk.buffer)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                chunk = self._next()
                self._ready.put(chunk)
                if chunk is None:
                    return
        except BaseException as exc:  # handed to the writer, which raises it
            self._ready.put(exc)

    def _next(self) -> _Chunk | None:
        src = self._src
        n_ops = read_varint(src)
        if not n_ops:
            size = read_varint(src)
            digest = read_exact(src, DIGEST_LEN)
            if src.read(1):
                raise DeltaFormatError("trailing bytes after the end of the delta")
            self.trailer = (size, digest)
            return None
        copies, columns_len, literals_len = read_varint(src), read_varint(src), read_varint(src)
        if n_ops > _MAX_CHUNK_OPS or literals_len > _MAX_CHUNK_LITERALS or copies > n_ops:
            raise DeltaFormatError(f"delta chunk too large ({n_ops} ops, {literals_len} literal bytes)")
        kinds = np.frombuffer(read_exact(src, n_ops), dtype=np.uint8)
        values = decode_varints(read_exact(src, columns_len), n_ops + copies)
        buffer = self._free.get()
        if buffer is None:  # the writer stopped
            raise DeltaFormatError("patch stopped")
        if len(buffer) < literals_len:
            buffer = bytearray(literals_len)
        literals = memoryview(buffer)[:literals_len]
        got = 0
        while got < literals_len:
            k = src.readinto(literals[got:])  # type: ignore[attr-defined]  # as patcher_v2._fill
            if not k:
                raise DeltaFormatError("delta stream truncated")
            got += k
        lo, hi, self._expected = _ranges(
            kinds,
            values,
            copies,
            literals_len,
            self._expected,
            self._block_size,
            self._n_blocks,
            self._old_size,
        )
        return _Chunk(kinds, lo, hi, self._old, literals, buffer)


def _ranges(
    kinds: np.ndarray,
    values: np.ndarray,
    copies: int,
    literals_len: int,
    expected: int,
    block_size: int,
    n_blocks: int,
    old_size: int,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Every op's source range: bytes of the old file for a copy, of the chunk's literals for a
    literal; and the block after the chunk's last copy."""
    n_ops = len(kinds)
    is_copy = kinds == OP_COPY
    if int(np.count_nonzero(is_copy)) != copies or not np.all(is_copy | (kinds == OP_LITERAL)):
        bad = kinds[~(is_copy | (kinds == OP_LITERAL))]
        raise DeltaFormatError(
            f"unknown delta op {int(bad[0]):#x}" if len(bad) else "op kinds disagree with the chunk"
        )
    firsts, counts = values[:n_ops], values[n_ops:].astype(np.int64)
    lo = np.empty(n_ops, dtype=np.int64)
    hi = np.empty(n_ops, dtype=np.int64)
    if copies:
        moves = unzigzag(firsts[is_copy])
        if np.any(np.abs(moves) > n_blocks) or np.any(counts < 1) or np.any(counts > n_blocks):
            raise DeltaFormatError("copy outside the old file")
        starts = expected + np.cumsum(moves + counts) - counts
        if np.any(starts < 0) or np.any(starts >= n_blocks):
            raise DeltaFormatError("copy outside the old file")
        lo[is_copy] = starts * block_size
        hi[is_copy] = np.minimum((starts + counts) * block_size, old_size)
        expected = int(starts[-1] + counts[-1])
    lengths = firsts[~is_copy].astype(np.int64)
    if int(lengths.sum()) != literals_len or np.any(lengths < 1):
        raise DeltaFormatError("literal lengths disagree with the chunk")
    ends = np.cumsum(lengths)
    lo[~is_copy] = ends - lengths
    hi[~is_copy] = ends
    return lo, hi, expected


def _slices(
    kinds: np.ndarray, lo: np.ndarray, hi: np.ndarray, old: memoryview, lit: memoryview
) -> list[memoryview]:
    is_copy = (kinds == OP_COPY).tolist()
    return [(old if c else lit)[a:b] for c, a, b in zip(is_copy, lo.tolist(), hi.tolist(), strict=True)]


def _sink(out: BinaryIO) -> _FdSink | _GatherSink:
    fd = _regular_fd(out)
    if fd is None:
        return _GatherSink(out)
    out.flush()  # what the caller buffered goes first
    return _FdSink(fd)


def _regular_fd(out: BinaryIO) -> int | None:
    try:
        fd = out.fileno()
        return fd if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        return None


class _FdSink:
    """Hands the output's slices to the kernel many at a time (one writev per _IOV slices): no
    gather copy in user space, a few syscalls per chunk; compiled (native.c) where it is built."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def put(self, chunk: _Chunk) -> int:
        if lib is None:
            return self._put(chunk.parts, chunk.lengths)
        done: int = lib.hc_write_ops(self._fd, *chunk.native())
        if done < 0:
            raise OSError(-done, os.strerror(-done))
        return done

    def _put(self, parts: list[memoryview], lengths: np.ndarray) -> int:
        ends: list[int] = np.cumsum(lengths).tolist()
        for a in range(0, len(parts), _IOV):
            b = min(a + _IOV, len(parts))
            want = ends[b - 1] - (ends[a - 1] if a else 0)
            done = os.writev(self._fd, parts[a:b])
            if done != want:  # a short write (a full disk, a signal): the rest one slice at a time
                self._rest(parts[a:b], done)
        return ends[-1] if ends else 0

    def _rest(self, parts: list[memoryview], done: int) -> None:
        for part in parts:
            if done >= len(part):
                done -= len(part)
                continue
            view = part[done:]
            done = 0
            while len(view):
                n = os.write(self._fd, view)
                if not n:  # nothing taken and no error: retrying would spin for ever (as native.c)
                    raise OSError(errno.EIO, "the output file took no bytes")
                view = view[n:]


class _GatherSink:
    """For outputs that are not files (a BytesIO): the chunk's slices gathered into pieces of about
    _GATHER bytes, each written once; an op of _DIRECT bytes or more goes out as it is."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._gather = io.BytesIO()  # reused: fresh 1 MiB buffers cost a page fault per 4 KiB

    def put(self, chunk: _Chunk) -> int:
        return _write(chunk.parts, chunk.lengths, self._gather, self._out)


def _write(parts: list[memoryview], lengths: np.ndarray, gather: io.BytesIO, out: BinaryIO) -> int:
    at = np.cumsum(lengths) - lengths
    long = lengths >= _DIRECT
    cut = np.empty(len(parts), dtype=bool)
    cut[0] = True
    cut[1:] = (at[1:] // _GATHER != at[:-1] // _GATHER) | long[1:] | long[:-1]
    bounds = np.flatnonzero(cut).tolist() + [len(parts)]
    for a, b in zip(bounds, bounds[1:], strict=False):
        if b - a == 1:
            out.write(parts[a])
            continue
        gather.seek(0)
        gather.writelines(parts[a:b])
        n = gather.tell()
        with gather.getbuffer() as view, view[:n] as piece:
            out.write(piece)
    return int(lengths.sum())
