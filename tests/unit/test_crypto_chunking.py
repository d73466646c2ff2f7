"""Content-defined chunking: bounds kept, and an edit moves only the boundaries near it."""

from __future__ import annotations

import random

from hycloud_core.crypto import chunking


def data(size: int, seed: int = 1) -> bytes:
    return random.Random(seed).randbytes(size)


def test_chunks_cover_the_data_within_bounds():
    blob = data(4 * 1024 * 1024)
    pieces = list(chunking.chunks(blob))
    assert b"".join(pieces) == blob
    assert all(chunking.MIN <= len(p) <= chunking.MAX for p in pieces[:-1])
    assert 32 <= len(pieces) <= 128  # about 64 KiB on average
    assert chunking.boundaries(b"") == []
    assert list(chunking.chunks(b"tiny")) == [b"tiny"]


def test_a_one_byte_insert_changes_at_most_two_chunks():
    blob = data(8 * 1024 * 1024)
    edited = blob[:5_000_000] + b"!" + blob[5_000_000:]
    old, new = set(chunking.chunks(blob)), list(chunking.chunks(edited))
    assert sum(p not in old for p in new) <= 2
