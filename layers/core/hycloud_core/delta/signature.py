"""Checksum list of an old file version, its wire form, and the lookup index the delta side needs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, BinaryIO

import numpy as np
import zstandard

from ..streams import read_full
from . import rolling
from .compiled import ffi, lib
from .errors import DeltaFormatError
from .wire import SIG_FLAG_ZSTD, SIG_HEADER, SIG_MAGIC, SIG_VERSION

MAX_BLOCK_SIZE = 1 << 24
_READ_TARGET = 1 << 20
_MAX_BITS = 22
_THIN_ABOVE = 32  # survivors of the first bitmap above which the second one is applied


@dataclass(frozen=True)
class Signature:
    """Weak and strong sums of every block of the old file; the last block may be short."""

    block_size: int
    strong_len: int
    old_size: int
    weak: np.ndarray  # uint32, one per block
    strong: bytes  # strong_len bytes per block, concatenated

    @property
    def block_count(self) -> int:
        return -(-self.old_size // self.block_size)

    def strong_of(self, j: int) -> bytes:
        return self.strong[j * self.strong_len : (j + 1) * self.strong_len]

    def encode(self, compress: bool = True) -> bytes:
        """Header plus columnar body (weak sums, then strong sums); zstd body only when it is smaller."""
        body = self.weak.astype("<u4").tobytes() + self.strong
        flags = 0
        if compress and body:
            packed = zstandard.ZstdCompressor(level=3).compress(body)
            if len(packed) < len(body):
                body, flags = packed, SIG_FLAG_ZSTD
        header = SIG_HEADER.pack(
            SIG_MAGIC, SIG_VERSION, flags, self.block_size, self.strong_len, self.old_size
        )
        return header + body

    @classmethod
    def decode(cls, data: bytes) -> Signature:
        if len(data) < SIG_HEADER.size:
            raise DeltaFormatError("signature truncated: header incomplete")
        magic, version, flags, block_size, strong_len, old_size = SIG_HEADER.unpack_from(data)
        _check_header(magic, version, flags, block_size, strong_len)
        n = -(-old_size // block_size)
        expected = n * (4 + strong_len)
        body = data[SIG_HEADER.size :]
        if flags & SIG_FLAG_ZSTD:
            body = _decompress(body, expected)
        if len(body) != expected:
            raise DeltaFormatError(f"signature body is {len(body)} bytes, header implies {expected}")
        weak = np.frombuffer(body, dtype="<u4", count=n).astype(np.uint32)
        return cls(block_size, strong_len, old_size, weak, bytes(body[4 * n :]))


def _check_header(magic: bytes, version: int, flags: int, block_size: int, strong_len: int) -> None:
    if magic != SIG_MAGIC:
        raise DeltaFormatError("not a signature (bad magic)")
    if version != SIG_VERSION:
        raise DeltaFormatError(f"unsupported signature version {version}")
    if flags & ~SIG_FLAG_ZSTD:
        raise DeltaFormatError(f"unknown signature flags {flags:#x}")
    if not 1 <= block_size <= MAX_BLOCK_SIZE:
        raise DeltaFormatError(f"bad block size {block_size}")
    if not rolling.MIN_STRONG_LEN <= strong_len <= rolling.FULL_STRONG_LEN:
        raise DeltaFormatError(f"bad strong checksum length {strong_len}")


def _decompress(body: bytes, expected: int) -> bytes:
    try:
        return zstandard.ZstdDecompressor().decompress(body, max_output_size=max(expected, 1))
    except zstandard.ZstdError as exc:
        raise DeltaFormatError(f"signature body does not decompress: {exc}") from exc


def encoded_size_bound(old_size: int, block_size: int, strong_len: int | None = None) -> int:
    """Most bytes `compute(old, block_size).encode()` can take, known without reading the file
    (the body is compressed only when that makes it smaller)."""
    if strong_len is None:
        strong_len = rolling.default_strong_len(old_size, block_size)
    blocks = -(-old_size // block_size)
    return SIG_HEADER.size + blocks * (4 + strong_len)


def fitting_block_size(old_size: int, wanted: int, limit: int, sizes: Sequence[int]) -> int | None:
    """The wanted block size, or the next larger of `sizes` whose checksum list fits `limit` bytes
    (one API request); None when none does."""
    for size in sorted({wanted, *(s for s in sizes if s > wanted)}):
        if encoded_size_bound(old_size, size) <= limit:
            return size
    return None


def compute(
    old: BinaryIO, block_size: int, strong_len: int | None = None, size_hint: int | None = None
) -> Signature:
    """Stream the old file once; memory is one read piece plus the signature itself."""
    if not 1 <= block_size <= MAX_BLOCK_SIZE:
        raise ValueError(f"block size must be in [1, {MAX_BLOCK_SIZE}]")
    if strong_len is None:
        strong_len = rolling.default_strong_len(
            size_hint if size_hint is not None else _size_of(old), block_size
        )
    piece_size = max(1, _READ_TARGET // block_size) * block_size
    weaks: list[np.ndarray] = []
    strongs: list[bytes] = []
    total = 0
    while piece := read_full(old, piece_size):
        total += len(piece)
        n_full = len(piece) // block_size
        weaks.append(
            rolling.block_sums(np.frombuffer(piece, dtype=np.uint8, count=n_full * block_size), block_size)
        )
        # one bytes object per piece, not per block: a 2 GiB file at 256 B blocks has 8M blocks
        strongs.append(
            b"".join(
                rolling.block_strong_sums(memoryview(piece), 0, n_full * block_size, block_size, strong_len)
            )
        )
        if len(piece) % block_size:
            tail = piece[n_full * block_size :]
            weaks.append(np.array([rolling.weak_sum(tail)], dtype=np.uint32))
            strongs.append(rolling.strong_sum(tail, strong_len))
    weak = np.concatenate(weaks) if weaks else np.empty(0, dtype=np.uint32)
    return Signature(block_size, strong_len, total, weak, b"".join(strongs))


def _size_of(f: BinaryIO) -> int:
    """Size of a seekable stream from its current position; 1 GiB when unknown (strong sums err long)."""
    try:
        here = f.tell()
        end = f.seek(0, 2)
        f.seek(here)
        return end - here
    except (OSError, AttributeError, ValueError):
        return 1 << 30


class SigIndex:
    """Lookup structures over the full blocks: weak sums sorted for searchsorted, plus a bitmap
    prefilter on the weak sum's top bits so most non-matching offsets cost one table read."""

    def __init__(self, sig: Signature) -> None:
        self.sig = sig
        self.block_size = sig.block_size
        self.n_full = sig.old_size // sig.block_size
        self.tail_len = sig.old_size % sig.block_size
        weak = sig.weak[: self.n_full]
        self.weak = weak
        self.order = np.argsort(weak, kind="stable")
        self.sorted_weak = weak[self.order]
        # one slot past the end repeats the last value: a search past it then finds no hit
        self.sorted_ext = np.append(self.sorted_weak, self.sorted_weak[-1:])
        bits = min(_MAX_BITS, max(12, self.n_full.bit_length() + 8))
        self.shift = np.uint32(32 - bits)
        self.table = np.zeros(1 << bits, dtype=bool)
        self.table[self.sorted_weak >> self.shift] = True
        self.table2 = np.zeros(1 << bits, dtype=bool)
        self.table2[_remix(self.sorted_weak, self.shift)] = True

    def candidates(self, weaks: np.ndarray, base: int = 0) -> tuple[list[int], list[int]]:
        """Offsets (base + index into `weaks`) whose weak sum is some block's, and its slot in
        sorted order.

        A bitmap on the top bits rejects almost every non-matching offset with one table read, a
        second one after a multiplicative remix thins the survivors, a binary search confirms the
        rest. Each bitmap is at most 4 MiB, so lookups stay cached. After a match run ends the
        window is a few thousand offsets, so in numpy the calls' fixed cost, not the offsets, is
        what a lookup costs; compiled, it is one pass.
        """
        if self.n_full == 0 or len(weaks) == 0:
            return [], []
        if lib is None:
            return self.numpy_candidates(weaks, base)
        idx = np.empty(len(weaks), dtype=np.int64)
        slot = np.empty(len(weaks), dtype=np.int64)
        m = lib.hc_candidates(
            ffi.from_buffer("uint32_t[]", weaks),
            len(weaks),
            *self._c_lookup,
            ffi.from_buffer("int64_t[]", idx),
            ffi.from_buffer("int64_t[]", slot),
        )
        return (idx[:m] + base).tolist(), slot[:m].tolist()

    def weak_run(self, weaks: np.ndarray, at: int, j: int) -> int:
        """How many of blocks j, j+1, ... follow back to back from offset `at` of `weaks` by weak
        sum (their strong sums are yet to be compared)."""
        bs = self.block_size
        m = min((len(weaks) - 1 - at) // bs + 1 if at < len(weaks) else 0, self.n_full - j)
        if m <= 0:
            return 0
        if lib is None:
            differ = np.flatnonzero(weaks[at : at + m * bs : bs] != self.weak[j : j + m])
            return int(differ[0]) if len(differ) else m
        run: int = lib.hc_weak_run(
            ffi.from_buffer("uint32_t[]", weaks), len(weaks), at, bs, self._c_weak, j, m
        )
        return run

    @cached_property
    def _c_lookup(self) -> tuple[Any, ...]:
        """The index as the compiled lookup takes it, wrapped once (bit-packed bitmaps: 4M entries
        in 512 KiB stay in cache, where a byte each would not)."""
        return (
            ffi.from_buffer("uint8_t[]", np.packbits(self.table, bitorder="little")),
            ffi.from_buffer("uint8_t[]", np.packbits(self.table2, bitorder="little")),
            int(self.shift),
            ffi.from_buffer("uint32_t[]", self.sorted_weak),
            self.n_full,
        )

    @cached_property
    def _c_weak(self) -> Any:  # a cffi buffer
        return ffi.from_buffer("uint32_t[]", np.ascontiguousarray(self.weak))

    def numpy_candidates(self, weaks: np.ndarray, base: int = 0) -> tuple[list[int], list[int]]:
        idx = self.table.take(weaks >> self.shift, mode="wrap").nonzero()[0]
        w = weaks.take(idx)
        if len(idx) > _THIN_ABOVE:
            keep = self.table2.take(_remix(w, self.shift), mode="wrap")
            idx, w = idx[keep], w[keep]
        slot = self.sorted_weak.searchsorted(w)
        hit = self.sorted_ext.take(slot) == w
        return (idx[hit] + base).tolist(), slot[hit].tolist()


def _remix(w: np.ndarray, shift: np.uint32) -> np.ndarray:
    return (w * np.uint32(0x85EBCA6B)) >> shift
