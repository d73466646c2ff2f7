"""Delta of a new file version against a signature: rsync's greedy match.

Why this engine: the cost of rsync-style matching is the weak sum at every byte offset, which a
pure-Python loop cannot afford. Two compiled loops (native.c, built with cffi; numpy computes the
same where they are not built) do the per-offset work: the weak sums of a whole piece (256 KiB or
more) rolled in four lanes, and the candidate lookup, in windows that start where the last run of
matched blocks ended: a bit-packed bitmap on the sums' top bits (and a second, remixed one)
discards almost every non-matching offset with one cached read, a binary search confirms the rest,
and offsets inside matched runs are never looked up at all. The Python loop applies rsync's greedy
rule (take a match, jump a block, else slide one byte) to the survivors. Once a block matches, the
run that follows (block j+1 at the next block offset, j+2 after it, ...) is measured by weak sum in
one call and confirmed by strong sums: one by one when it is short (most runs in a file with many
small edits are), else with one joined compare, so unchanged stretches cost about one strong-hash
call per block. Memory stays bounded by one piece and its arrays, plus the signature's index (about
16 + strong_len bytes per old block and two bitmaps of at most 4 MiB). Measured against librsync's
rdiff on four series of release tarballs in bench/results/delta.md; the wire format stays ours
(FORMAT.md). Tried and dropped: a reader thread running one piece ahead (the many short GIL
hand-offs around numpy calls made it slower); after a run ends, comparing the next offsets with
just the old file's next few blocks before the general lookup (on Django's tarballs it almost
never found them and cost a quarter more time); and a compiled lookup that stops at the first few
candidates (no faster than scanning the window: the windows are short).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import xxhash
import zstandard

from ..streams import read_full
from . import rolling
from .opwriter import WRITERS, OpWriter, Sink
from .signature import SigIndex, Signature
from .wire import VERSION, result_hash

DEFAULT_LEVEL = 3
PIECE_TARGET = 1 << 18
_MAX_SAME_WEAK = 16
_WINDOW_MIN = 1 << 12  # offsets looked up after a match run ends
_WINDOW_MAX = 1 << 18
_SHORT_RUN = 4  # blocks of a run checked one by one before the bulk check


@dataclass(frozen=True)
class DeltaStats:
    new_size: int
    digest: bytes  # XXH3-128 of the new file, as in END
    literal_bytes: int
    copied_bytes: int
    copy_ops: int
    literal_ops: int
    raw_bytes: int  # delta before zstd
    compressed_bytes: int  # what goes on the wire


@dataclass
class _Piece:
    start: int  # absolute offset of data[0]
    data: bytes  # the piece plus up to block_size-1 bytes of look-ahead
    length: int  # bytes owned by this piece (offsets start .. start+length-1)
    last: bool
    weaks: np.ndarray  # weak sum at every offset data[k] with a full block after it


def _pieces(new: BinaryIO, block_size: int, check: xxhash.xxh3_128, piece_size: int) -> Iterator[_Piece]:
    start = 0
    cur = read_full(new, piece_size)
    check.update(cur)
    while cur:
        nxt = read_full(new, piece_size)
        check.update(nxt)
        data = cur + nxt[: block_size - 1] if nxt else cur
        n_off = max(0, min(len(cur), len(data) - block_size + 1))
        weaks = rolling.all_window_sums(data, block_size, n_off)
        yield _Piece(start, data, len(cur), not nxt, weaks)
        start += len(cur)
        cur = nxt


class _Matcher:
    """rsync's greedy walk over the candidate offsets of each piece."""

    def __init__(self, index: SigIndex, writer: OpWriter) -> None:
        self.index = index
        self.sig = index.sig
        self.w = writer
        self.pos = 0  # first byte not yet covered by an emitted op
        self.last_j = -2

    def _match(self, block: memoryview, slot: int) -> int:
        ix, sig = self.index, self.sig
        s = sig.strong_len
        wk = ix.sorted_weak[slot]
        digest = rolling.strong_sum(block, s)
        e = self.last_j + 1
        if 0 <= e < ix.n_full and ix.weak[e] == wk and sig.strong[e * s : e * s + s] == digest:
            return e
        strong, order, sorted_weak = sig.strong, ix.order, ix.sorted_weak
        for t in range(slot, min(slot + _MAX_SAME_WEAK, ix.n_full)):
            if sorted_weak[t] != wk:
                break
            j = int(order[t])
            if strong[j * s : j * s + s] == digest:
                return j
        return -1

    def feed(self, p: _Piece) -> None:
        """Greedy walk over one piece. Candidate offsets are looked up lazily, in windows that
        start where the last match run ended, so offsets inside matched runs are never looked up."""
        bs, ix = self.index.block_size, self.index
        mv = memoryview(p.data)
        n_off = len(p.weaks) if ix.n_full else 0
        cand: list[int] = []
        slot: list[int] = []
        i = 0
        looked_up = 0  # candidates are known for piece offsets below this
        window = _WINDOW_MIN
        while True:
            rel_pos = self.pos - p.start
            if i < len(cand) and cand[i] < rel_pos:
                i = bisect_left(cand, rel_pos, i + 1)
            if i >= len(cand):
                lo = max(rel_pos, looked_up)
                if lo >= n_off:
                    break
                hi = min(n_off, lo + max(window, 4 * bs))
                cand, slot = ix.candidates(p.weaks[lo:hi], lo)
                i, looked_up = 0, hi
                window = min(2 * window, _WINDOW_MAX)
                continue
            rel = cand[i]
            j = self._match(mv[rel : rel + bs], slot[i])
            if j >= 0:
                self._take(p, mv, rel_pos, rel, j)
                window = _WINDOW_MIN
            i += 1
        if p.last:
            self._tail(p, mv)
        end = p.start + p.length
        if self.pos < end:
            self.w.literal(mv[self.pos - p.start : p.length])
            self.pos = end

    def _take(self, p: _Piece, mv: memoryview, rel_pos: int, rel: int, j: int) -> None:
        """Block j matches at piece offset rel: literal up to it, then the run it starts."""
        self.w.literal(mv[rel_pos:rel])
        run = 1 + self._extend(p, mv, rel + self.index.block_size, j + 1)
        self.w.copy_run(j, run)
        self.pos = p.start + rel + self.index.block_size * run
        self.last_j = j + run - 1

    def _extend(self, p: _Piece, mv: memoryview, rel: int, j: int) -> int:
        """How many of blocks j, j+1, ... follow back to back from piece offset `rel`.

        Weak sums first, in one call; then the strong sums of that run: one by one when it is short
        (most runs in a file with many small edits are a few blocks long, and a joined comparison
        costs more there), else all at once with one joined comparison."""
        sig = self.sig
        bs, s, strong = self.index.block_size, sig.strong_len, sig.strong
        m = self.index.weak_run(p.weaks, rel, j)
        if m <= _SHORT_RUN:
            for t in range(m):
                k, jj = rel + t * bs, j + t
                if rolling.strong_sum(mv[k : k + bs], s) != strong[jj * s : jj * s + s]:
                    return t
            return m
        got = rolling.block_strong_sums(mv, rel, rel + m * bs, bs, s)
        want = strong[j * s : (j + m) * s]
        if b"".join(got) == want:
            return m
        return next(t for t in range(m) if got[t] != want[t * s : (t + 1) * s])

    def _tail(self, p: _Piece, mv: memoryview) -> None:
        """The old file's short last block can only match at the very end of the new file."""
        t = self.index.tail_len
        end = p.start + p.length
        if not t or end - self.pos < t:
            return
        block = bytes(mv[p.length - t : p.length])
        j, sig = self.index.n_full, self.sig
        weak_ok = rolling.weak_sum(block) == int(sig.weak[j])
        if weak_ok and rolling.strong_sum(block, sig.strong_len) == sig.strong_of(j):
            self.w.literal(mv[self.pos - p.start : p.length - t])
            self.w.copy(j)
            self.pos = end


def delta(
    sig: bytes | Signature,
    new: BinaryIO,
    out: Sink,
    level: int = DEFAULT_LEVEL,
    piece_size: int = PIECE_TARGET,
    version: int = VERSION,
) -> DeltaStats:
    """Write the zstd-compressed delta that turns the signature's old file into `new`.

    `new` is read once, front to back, `piece_size` bytes at a time (at least 4 blocks). `version`
    2 writes the older layout, for peers that read only that one (and for tests of its reader).
    """
    sig = sig if isinstance(sig, Signature) else Signature.decode(sig)
    index = SigIndex(sig)
    piece_size = max(piece_size, 4 * sig.block_size)
    check = result_hash()
    counter = _CountingWriter(out)
    # zstandard only writes to it (the stubs ask for a whole IO)
    zw = zstandard.ZstdCompressor(level=level).stream_writer(counter, closefd=False)  # type: ignore[arg-type]
    writer = WRITERS[version](zw, sig.block_size, sig.old_size)
    matcher = _Matcher(index, writer)
    for piece in _pieces(new, sig.block_size, check, piece_size):
        matcher.feed(piece)
    digest = check.digest()
    writer.end(matcher.pos, digest)
    zw.close()  # ends the zstd frame; closefd=False leaves `out` open
    return DeltaStats(
        new_size=matcher.pos,
        digest=digest,
        literal_bytes=writer.literal_bytes,
        copied_bytes=matcher.pos - writer.literal_bytes,
        copy_ops=writer.copy_ops,
        literal_ops=writer.literal_ops,
        raw_bytes=writer.raw,
        compressed_bytes=counter.count,
    )


class _CountingWriter:
    """Pass-through that counts the compressed bytes written to the caller's stream."""

    def __init__(self, out: Sink) -> None:
        self._out = out
        self.count = 0

    def write(self, data: bytes) -> int:
        wrote = self._out.write(data)
        n = wrote if isinstance(wrote, int) else len(data)  # a sink may answer None
        self.count += n
        return n

    def flush(self) -> None:
        if hasattr(self._out, "flush"):
            self._out.flush()
