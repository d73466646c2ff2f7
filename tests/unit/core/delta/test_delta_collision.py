"""A genuine weak+strong collision: a wrong block is copied, the whole-file hash catches it, the retry fixes it.

Thue-Morse strings collide for every polynomial hash modulo 2**32 with an odd base once they are
128 bytes long (the difference is a product of factors p**(2**i) - 1, which together hold more
than 32 factors of two). With a 1-byte strong sum a byte pair whose two strings also agree on the
first BLAKE2b byte turns up after a few hundred tries.
"""

import io
import itertools

import pytest

from hycloud_core.delta import (
    DeltaMismatch,
    delta,
    fetch_and_patch,
    local_delta_source,
    patch_bytes,
    signature_bytes,
)
from hycloud_core.delta.rolling import strong_sum, weak_sum

BLOCK = 128


def thue_morse(a: int, b: int, n: int = BLOCK) -> bytes:
    return bytes(a if bin(i).count("1") % 2 == 0 else b for i in range(n))


@pytest.fixture(scope="module")
def colliding_blocks() -> tuple[bytes, bytes]:
    for a, b in itertools.permutations(range(256), 2):
        s, t = thue_morse(a, b), thue_morse(b, a)
        if strong_sum(s, 1) == strong_sum(t, 1):
            return s, t
    raise AssertionError("no 1-byte strong collision among Thue-Morse pairs")


def test_blocks_really_collide(colliding_blocks):
    s, t = colliding_blocks
    assert s != t
    assert weak_sum(s) == weak_sum(t)
    assert strong_sum(s, 1) == strong_sum(t, 1)
    assert strong_sum(s, 32) != strong_sum(t, 32)


def test_short_strong_sum_copies_wrong_block_and_the_file_hash_catches_it(colliding_blocks):
    s, t = colliding_blocks
    tail = bytes(range(200))
    old, new = s + tail, t + tail
    d = io.BytesIO()
    stats = delta(signature_bytes(old, BLOCK, strong_len=1), io.BytesIO(new), d)
    assert stats.literal_bytes == 0  # the collision made every block "match"
    with pytest.raises(DeltaMismatch):
        patch_bytes(old, d.getvalue())


def test_retry_with_full_strong_sums_yields_exact_bytes(colliding_blocks):
    s, t = colliding_blocks
    tail = bytes(range(200))
    old, new = s + tail, t + tail
    out = io.BytesIO()
    attempts = fetch_and_patch(io.BytesIO(old), BLOCK, local_delta_source(io.BytesIO(new)), out, strong_len=1)
    assert attempts == 2
    assert out.getvalue() == new


def test_no_retry_when_first_attempt_is_right():
    old, new = b"0123456789" * 100, b"0123456789" * 50 + b"edit" + b"0123456789" * 50
    out = io.BytesIO()
    assert fetch_and_patch(io.BytesIO(old), 32, local_delta_source(io.BytesIO(new)), out) == 1
    assert out.getvalue() == new


def test_wrong_old_file_is_a_mismatch_even_at_full_length():
    old, other, new = b"a" * 1000, b"b" * 1000, b"a" * 500 + b"c" * 500
    d = delta_to(old, new)
    with pytest.raises(DeltaMismatch):
        patch_bytes(other, d)


def delta_to(old: bytes, new: bytes) -> bytes:
    out = io.BytesIO()
    delta(signature_bytes(old, 64, strong_len=32), io.BytesIO(new), out)
    return out.getvalue()
