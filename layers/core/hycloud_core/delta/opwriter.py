"""Encoding of the matcher's ops into the delta's layouts (FORMAT.md): consecutive block copies are
merged into runs, then written as version 3 columnar chunks or, on request, version 2's op stream.

Version 3 puts each chunk's ops in columns (kinds, then varints) ahead of its literal bytes, so the
patcher decodes a chunk's ops with a few numpy calls and gathers its output in one join, instead of
parsing op by op in Python: that per-op loop is what made patching slower than librsync's.
"""

from __future__ import annotations

from typing import Protocol

from .wire import (
    DELTA_HEADER,
    DELTA_MAGIC,
    OP_COPY,
    OP_END,
    OP_LITERAL,
    STREAM_VERSION,
    VERSION,
    put_varint,
    zigzag,
)

FLUSH_AT = 1 << 20  # bytes of literal data per chunk (v3) or per write to zstd (v2)
CHUNK_OPS = 1 << 15  # ops per chunk (v3)


class Sink(Protocol):
    def write(self, data: bytes | bytearray) -> object: ...


class OpWriter:
    """Run merging and counters shared by both layouts; subclasses encode the ops."""

    version = VERSION

    def __init__(self, sink: Sink, block_size: int, old_size: int) -> None:
        self._sink = sink
        self._run_start = -1
        self._run_len = 0
        self._expected = 0
        self.raw = 0
        self.literal_bytes = self.copied_blocks = self.copy_ops = self.literal_ops = 0
        self._emit(DELTA_HEADER.pack(DELTA_MAGIC, self.version, 0, block_size, old_size))

    def copy(self, j: int) -> None:
        self.copy_run(j, 1)

    def copy_run(self, j: int, count: int) -> None:
        if self._run_len and j == self._run_start + self._run_len:
            self._run_len += count
            return
        self._end_run()
        self._run_start, self._run_len = j, count

    def literal(self, data: memoryview | bytes) -> None:
        if not len(data):
            return
        self._end_run()
        self.literal_bytes += len(data)
        self._literal(data)

    def end(self, size: int, digest: bytes) -> None:
        self._end_run()
        self._end(size, digest)

    def _end_run(self) -> None:
        if not self._run_len:
            return
        self.copied_blocks += self._run_len
        self.copy_ops += 1
        self._copy(zigzag(self._run_start - self._expected), self._run_len)
        self._expected = self._run_start + self._run_len
        self._run_len = 0

    def _emit(self, data: bytes | bytearray) -> None:
        self.raw += len(data)
        self._sink.write(data)

    def _copy(self, start_delta: int, count: int) -> None:
        raise NotImplementedError

    def _literal(self, data: memoryview | bytes) -> None:
        raise NotImplementedError

    def _end(self, size: int, digest: bytes) -> None:
        raise NotImplementedError


class ColumnWriter(OpWriter):
    """Version 3: chunks of at most FLUSH_AT literal bytes and CHUNK_OPS ops, ops in columns."""

    version = VERSION

    def __init__(self, sink: Sink, block_size: int, old_size: int) -> None:
        self._kinds = bytearray()
        self._firsts = bytearray()  # literal: length; copy: zigzag(start - expected)
        self._counts = bytearray()  # copies only: blocks
        self._literals = bytearray()
        self._copies = 0
        super().__init__(sink, block_size, old_size)

    def _copy(self, start_delta: int, count: int) -> None:
        self._copies += 1
        self._kinds.append(OP_COPY)
        put_varint(start_delta, self._firsts)
        put_varint(count, self._counts)
        if len(self._kinds) >= CHUNK_OPS:
            self._flush()

    def _literal(self, data: memoryview | bytes) -> None:
        view = memoryview(data)
        while len(view):
            take = view[: FLUSH_AT - len(self._literals)]
            self._kinds.append(OP_LITERAL)
            put_varint(len(take), self._firsts)
            self._literals += take
            self.literal_ops += 1
            view = view[len(take) :]
            if len(self._literals) >= FLUSH_AT or len(self._kinds) >= CHUNK_OPS:
                self._flush()

    def _end(self, size: int, digest: bytes) -> None:
        self._flush()
        tail = bytearray([0])  # a chunk of no ops ends the delta
        put_varint(size, tail)
        self._emit(tail + digest)

    def _flush(self) -> None:
        if not self._kinds:
            return
        head = bytearray()
        columns = len(self._firsts) + len(self._counts)
        for value in (len(self._kinds), self._copies, columns, len(self._literals)):
            put_varint(value, head)
        for part in (head, self._kinds, self._firsts, self._counts, self._literals):
            self._emit(part)
        self._kinds, self._firsts, self._counts = bytearray(), bytearray(), bytearray()
        self._literals, self._copies = bytearray(), 0


class StreamWriter(OpWriter):
    """Version 2: one stream of ops, each literal's bytes right after its op."""

    version = STREAM_VERSION

    def __init__(self, sink: Sink, block_size: int, old_size: int) -> None:
        self._buf = bytearray()
        super().__init__(sink, block_size, old_size)

    def _copy(self, start_delta: int, count: int) -> None:
        self._buf.append(OP_COPY)
        put_varint(start_delta, self._buf)
        put_varint(count, self._buf)
        self._maybe_flush()

    def _literal(self, data: memoryview | bytes) -> None:
        self._buf.append(OP_LITERAL)
        put_varint(len(data), self._buf)
        self._buf += data
        self.literal_ops += 1
        self._maybe_flush()

    def _end(self, size: int, digest: bytes) -> None:
        self._buf.append(OP_END)
        put_varint(size, self._buf)
        self._buf += digest
        self._emit(self._buf)

    def _maybe_flush(self) -> None:
        if len(self._buf) >= FLUSH_AT:
            self._emit(self._buf)
            self._buf = bytearray()


WRITERS: dict[int, type[OpWriter]] = {VERSION: ColumnWriter, STREAM_VERSION: StreamWriter}
