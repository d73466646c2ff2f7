"""Versions made by splicing random bytes into random old content, for the delta property tests."""

from __future__ import annotations

import random


def spliced(seed: int, size: int, edits: list[tuple[float, int, int]]) -> tuple[bytes, bytes]:
    """Random old content of `size` bytes and a new version: each edit (where as a share of the
    length, bytes deleted, random bytes inserted) applied in turn."""
    rng = random.Random(seed)
    old = rng.randbytes(size)
    new = bytearray(old)
    for where, deleted, inserted in edits:
        at = int(where * len(new))
        new[at : at + deleted] = rng.randbytes(inserted)
    return old, bytes(new)
