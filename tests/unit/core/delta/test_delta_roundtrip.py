import io
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hycloud_core.delta import delta, delta_bytes, patch, patch_bytes, signature_bytes
from hycloud_core.delta.rolling import block_sums, weak_sum
from hycloud_core.delta.signature import Signature
from tests.unit.core.delta.edits import spliced

from .conftest import BLOCK_SIZES, edited_versions

SETTINGS = settings(max_examples=150, deadline=None)


def roundtrip(old: bytes, new: bytes, block: int, strong_len: int | None = None, piece: int = 64) -> bytes:
    sig = signature_bytes(old, block, strong_len)
    out = io.BytesIO()
    delta(sig, io.BytesIO(new), out, piece_size=piece)
    return patch_bytes(old, out.getvalue())


@SETTINGS
@given(edited_versions(), st.sampled_from(BLOCK_SIZES), st.sampled_from([None, 2, 4, 32]))
def test_random_edits_roundtrip_exactly(pair, block, strong_len):
    old, new = pair
    assert roundtrip(old, new, block, strong_len) == new


@SETTINGS
@given(st.binary(max_size=300), st.binary(max_size=300), st.sampled_from(BLOCK_SIZES + [1000, 4096]))
def test_unrelated_short_and_empty_files(old, new, block):
    assert roundtrip(old, new, block) == new


@pytest.mark.parametrize("old,new", [(b"", b""), (b"", b"abc" * 50), (b"abc" * 50, b""), (b"x", b"x")])
@pytest.mark.parametrize("block", [1, 4, 512])
def test_empty_old_or_new(old, new, block):
    assert roundtrip(old, new, block) == new


def test_identical_file_is_all_copies_and_tiny():
    old = bytes(range(256)) * 2000 + b"tail!"
    d = io.BytesIO()
    stats = delta(signature_bytes(old, 1024), io.BytesIO(old), d)
    assert stats.literal_bytes == 0
    assert stats.copied_bytes == len(old)
    assert stats.copy_ops == 1  # one run, short tail block included
    assert len(d.getvalue()) < 100
    assert patch_bytes(old, d.getvalue()) == old


def test_insert_at_front_keeps_later_blocks():
    import random

    rng = random.Random(7)
    old = rng.randbytes(200_000)
    new = b"inserted" + old
    d = io.BytesIO()
    stats = delta(signature_bytes(old, 512), io.BytesIO(new), d, piece_size=4096)
    assert stats.literal_bytes == len(b"inserted")
    assert patch_bytes(old, d.getvalue()) == new


def test_matches_across_piece_boundaries():
    import random

    rng = random.Random(11)
    old = rng.randbytes(50_000)
    new = old[:20_001] + b"!" + old[20_001:]
    sig = signature_bytes(old, 300)
    for piece in (1, 1200, 1201, 4099, 1 << 18):
        out = io.BytesIO()
        stats = delta(sig, io.BytesIO(new), out, piece_size=piece)
        assert patch_bytes(old, out.getvalue()) == new
        assert stats.literal_bytes <= 300 + 1


def test_streams_from_files(tmp_path):
    import random

    rng = random.Random(3)
    old = rng.randbytes(1_500_000)
    new = old[:700_000] + rng.randbytes(5000) + old[710_000:]
    (tmp_path / "old").write_bytes(old)
    (tmp_path / "new").write_bytes(new)
    with open(tmp_path / "old", "rb") as f:
        from hycloud_core.delta.sync import signature

        sig = signature(f, 2048)
    with open(tmp_path / "new", "rb") as f, open(tmp_path / "delta", "wb") as out:
        stats = delta(sig, f, out)
    assert stats.compressed_bytes == (tmp_path / "delta").stat().st_size
    with (
        open(tmp_path / "old", "rb") as f,
        open(tmp_path / "delta", "rb") as d,
        open(tmp_path / "out", "wb") as o,
    ):
        assert patch(f, d, o) == len(new)
    assert (tmp_path / "out").read_bytes() == new


def test_signature_encode_decode_roundtrip():
    old = b"abcdefgh" * 1000 + b"xyz"
    for compress in (True, False):
        sig = Signature.decode(signature_bytes(old, 64))
        again = Signature.decode(sig.encode(compress=compress))
        assert again.weak.tolist() == sig.weak.tolist()
        assert again.strong == sig.strong
        assert (again.block_size, again.strong_len, again.old_size) == (64, sig.strong_len, len(old))


def test_repeated_blocks_compress_the_signature():
    old = bytes(1 << 20)
    sig = signature_bytes(old, 512)
    assert len(sig) < 1000  # 2048 identical entries


def test_delta_bytes_helper_matches_streaming():
    old, new = b"hello world " * 500, b"hello there " * 500
    sig = signature_bytes(old, 16)
    assert patch_bytes(old, delta_bytes(sig, new)) == new


@settings(max_examples=30, deadline=None)
@given(edited_versions(max_size=60_000), st.sampled_from([8, 32, 64]), st.sampled_from([64, 5000, 1 << 18]))
def test_roundtrip_with_many_lookup_windows_per_piece(pair, block, piece):
    """Files long enough that candidate lookups restart in many windows after match runs."""
    old, new = pair
    assert roundtrip(old, new, block, piece=piece) == new


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1_000, 40_000),
    st.lists(st.tuples(st.floats(0, 1), st.integers(0, 200), st.integers(0, 200)), max_size=6),
    st.sampled_from([16, 64, 256]),
)
def test_unchanged_stretches_are_copied_not_sent(seed, size, edits, block):
    """Literal bytes stay within the edited bytes plus about two blocks per edit."""
    old, new = spliced(seed, size, edits)
    out = io.BytesIO()
    stats = delta(signature_bytes(old, block), io.BytesIO(new), out, piece_size=4096)
    bound = sum(ins for _, _, ins in edits) + (2 * len(edits) + 1) * block
    assert stats.literal_bytes <= bound
    assert patch_bytes(old, out.getvalue()) == new


@pytest.mark.parametrize("block", [1, 7, 512, 4096])
def test_block_sums_are_the_weak_sums_of_each_block(block):
    data = random.Random(block).randbytes(block * 37)
    got = block_sums(np.frombuffer(data, dtype=np.uint8), block)
    assert got.tolist() == [weak_sum(data[o : o + block]) for o in range(0, len(data), block)]
