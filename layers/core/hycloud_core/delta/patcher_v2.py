"""Apply a version 2 delta (ops interleaved with literal bytes in one stream; FORMAT.md), kept so
deltas written before version 3 still apply. patcher.py reads the header and hands the rest here.

Why it is built this way: a delta over a source tree is thousands of short ops, so the cost is per
op, not per byte. Ops are parsed straight out of 1 MiB decompressed chunks (no call per byte),
copies are served from a window of the old file read ahead with `readinto` (copies that follow one
another in the old file share one read), and output is gathered into 1 MiB writes, each hashed
once. Memory: the old-file window (at most 1 MiB), the output buffer (1 MiB) and one decompressed
chunk (1 MiB plus one op), whatever the file sizes.
"""

from __future__ import annotations

from typing import BinaryIO

from .errors import DeltaFormatError, DeltaMismatch
from .wire import DIGEST_LEN, OP_COPY, OP_END, OP_LITERAL, result_hash, unzigzag

_CHUNK = 1 << 20
_OLD_READ = 1 << 18  # least read-ahead per old-file read; the window holds at most _CHUNK
_OP_MAX = 1 + 10 + 10  # opcode and two varints
_DIRECT = 1 << 16


def apply(old: BinaryIO, src: BinaryIO, block_size: int, old_size: int, out: BinaryIO) -> int:
    """Apply the ops that follow the header in the decompressed stream `src`; returns the size."""
    ops = _Ops(src)
    sink = _Sink(out)
    window = _OldWindow(old)
    expected = 0
    while True:
        op, first = ops.op()
        if op == OP_COPY:
            start = expected + unzigzag(first)
            count = ops.varint()
            if start < 0 or count < 1 or start * block_size >= old_size:
                raise DeltaFormatError(f"copy of blocks {start}+{count} outside the old file")
            expected = start + count
            offset = start * block_size
            n = min(count * block_size, old_size - offset)
            rel = offset - window.start
            if 0 <= rel and rel + n <= window.length:  # the common case, inline
                sink.add(window.view[rel : rel + n])
                window.prev_end = offset + n
            else:
                window.copy(offset, n, sink)
        elif op == OP_LITERAL:
            ops.literal(first, sink)
        elif op == OP_END:
            digest = ops.take(DIGEST_LEN)
            if not ops.at_eof():
                raise DeltaFormatError("trailing bytes after the end of the delta")
            sink.flush()
            verify(first, digest, sink.written, sink.check.digest())
            return sink.written
        else:
            raise DeltaFormatError(f"unknown delta op {op:#x}")


class _Sink:
    """Gathers short pieces into 1 MiB writes; each write is hashed once."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._buf = bytearray()
        self.check = result_hash()
        self.written = 0

    def add(self, data: memoryview | bytes) -> None:
        self.written += len(data)
        buf = self._buf
        if len(data) >= _DIRECT:  # long pieces go out as they are, without a copy into the buffer
            self.flush()
            self.check.update(data)
            self._out.write(data)
            return
        buf += data
        if len(buf) >= _CHUNK:
            self.flush()

    def flush(self) -> None:
        if self._buf:
            self.check.update(self._buf)
            self._out.write(self._buf)
            self._buf = bytearray()


class _OldWindow:
    """A window of the old file that follows the copies as they move forward: a copy that starts
    shortly after the previous one ends, or a long one, moves the window there (one read of at
    least 256 KiB), so the copies after it cost no read of their own. A short copy from elsewhere
    (a block repeated all over the file, such as a tar header) is read on its own and leaves the
    window where it is."""

    def __init__(self, old: BinaryIO) -> None:
        self._old = old
        self._buf = bytearray(_CHUNK)
        self.view = memoryview(self._buf)
        self.start = 0
        self.length = 0
        self.prev_end = 0

    def copy(self, offset: int, n: int, sink: _Sink) -> None:
        rel = offset - self.start
        if not 0 <= rel < self.length and n < _OLD_READ and not 0 <= offset - self.prev_end < _CHUNK:
            self._old.seek(offset)
            data = self._old.read(n)
            if len(data) < n:
                raise DeltaMismatch("old file ended early")
            sink.add(data)
            self.prev_end = offset + n
            return
        self.prev_end = offset + n
        while n:
            rel = offset - self.start
            if not 0 <= rel < self.length:
                self._fill(offset, n)
                rel = 0
            take = min(n, self.length - rel)
            sink.add(self.view[rel : rel + take])
            offset += take
            n -= take

    def _fill(self, offset: int, n: int) -> None:
        self._old.seek(offset)
        # a binary file object has readinto; typing.BinaryIO does not declare it
        got = self._old.readinto(self.view[: min(_CHUNK, max(n, _OLD_READ))])  # type: ignore[attr-defined]
        if not got:
            raise DeltaMismatch("old file ended early")
        self.start, self.length = offset, got


class _Ops:
    """The decompressed op stream, parsed from 1 MiB chunks without a call per byte."""

    def __init__(self, src: BinaryIO) -> None:
        self._src = src
        self._buf = b""
        self._pos = 0

    def _more(self, need: int) -> None:
        """Make at least `need` bytes available (fewer only at the end of the stream)."""
        parts = [self._buf[self._pos :]]
        have = len(parts[0])
        while have < need:
            chunk = self._src.read(_CHUNK)
            if not chunk:
                break
            parts.append(chunk)
            have += len(chunk)
        self._buf, self._pos = b"".join(parts), 0

    def take(self, n: int) -> bytes:
        if len(self._buf) - self._pos < n:
            self._more(n)
            if len(self._buf) < n:
                raise DeltaFormatError("delta stream truncated")
        data = self._buf[self._pos : self._pos + n]
        self._pos += n
        return data

    def op(self) -> tuple[int, int]:
        """The next opcode and its first varint (every op has one)."""
        if len(self._buf) - self._pos < _OP_MAX:
            self._more(_OP_MAX)
        buf, pos = self._buf, self._pos
        if pos + 2 <= len(buf) and buf[pos + 1] < 0x80:  # one-byte varint: most ops
            self._pos = pos + 2
            return buf[pos], buf[pos + 1]
        if pos >= len(buf):
            raise DeltaFormatError("delta stream truncated")
        self._pos = pos + 1
        return buf[pos], self.varint()

    def varint(self) -> int:
        buf, pos = self._buf, self._pos
        value = shift = 0
        while True:
            if pos >= len(buf):
                raise DeltaFormatError("delta stream truncated")
            byte = buf[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                self._pos = pos
                return value
            shift += 7
            if shift > 63:
                raise DeltaFormatError("varint too long")

    def literal(self, n: int, sink: _Sink) -> None:
        while n:
            if self._pos >= len(self._buf):
                self._more(1)
                if not self._buf:
                    raise DeltaFormatError("delta stream truncated")
            take = min(n, len(self._buf) - self._pos)
            sink.add(memoryview(self._buf)[self._pos : self._pos + take])
            self._pos += take
            n -= take

    def at_eof(self) -> bool:
        return self._pos >= len(self._buf) and not self._src.read(1)


def verify(size: int, digest: bytes, written: int, actual: bytes) -> None:
    if size != written:
        raise DeltaMismatch(f"patched {written} bytes, the delta expects {size}")
    if digest != actual:
        raise DeltaMismatch("patched file's hash differs from the new file's")
