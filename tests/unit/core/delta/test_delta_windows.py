"""Round trips that cross every window boundary of both delta layouts (version 3: delta chunks,
gathered writes, direct writes; version 2: old-file window, output buffer, decompressed op chunks)
and exercise both ways the encoder checks a run (short runs block by block, long runs in bulk).

The windows are 1 MiB in production; here they are shrunk to a few bytes (or ops) so that small
random files cross them many times."""

import io
import random
from contextlib import contextmanager
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hycloud_core.delta import (
    delta,
    encoder,
    opwriter,
    patch,
    patch_bytes,
    patcher,
    patcher_v2,
    signature_bytes,
)
from hycloud_core.delta.errors import DeltaMismatch
from tests.unit.core.delta.edits import spliced

from .conftest import BLOCK_SIZES, edited_versions

WINDOWS = st.sampled_from([(32, 8), (64, 64), (100, 7), (4096, 1024)])  # (bytes, least read or ops)
VERSIONS = st.sampled_from([2, 3])


def _roundtrip(old: bytes, new: bytes, block: int, piece: int = 64, version: int = 3) -> bytes:
    out = io.BytesIO()
    delta(signature_bytes(old, block), io.BytesIO(new), out, piece_size=piece, version=version)
    return patch_bytes(old, out.getvalue())


@contextmanager
def small_windows(size: int, small: int):
    """Version 2: `size`-byte op chunks and output buffer, old-file reads of at least `small`.
    Version 3: chunks of `size` literal bytes or `small` ops, gathered writes of `size` bytes, ops
    of `small` bytes or more written directly."""
    with (
        mock.patch.multiple(patcher_v2, _CHUNK=size, _OLD_READ=small),
        mock.patch.multiple(opwriter, FLUSH_AT=size, CHUNK_OPS=small),
        mock.patch.multiple(patcher, _GATHER=size, _DIRECT=small),
    ):
        yield


@settings(max_examples=150, deadline=None)
@given(edited_versions(max_size=20_000), st.sampled_from(BLOCK_SIZES), WINDOWS, VERSIONS)
def test_random_edits_roundtrip_across_patch_windows(pair, block, windows, version):
    old, new = pair
    with small_windows(*windows):
        assert _roundtrip(old, new, block, version=version) == new


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.sampled_from([4, 16, 64]), WINDOWS, VERSIONS)
def test_blocks_shuffled_and_repeated_roundtrip(seed, blocks, block, windows, version):
    """Copies that jump back and forth in the old file, and one block copied again and again (as a
    tar header is): both the window moves and the stand-alone reads."""
    rng = random.Random(seed)
    old = rng.randbytes(blocks * block + rng.randrange(block))
    parts = [old[i * block : (i + 1) * block] for i in range(blocks)]
    new = b"".join(
        rng.choice(parts) if rng.random() < 0.3 else part for part in rng.sample(parts, len(parts))
    )
    new += parts[0] * rng.randrange(5) + rng.randbytes(rng.randrange(50))
    with small_windows(*windows):
        assert _roundtrip(old, new, block, version=version) == new


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(2_000, 30_000),
    st.lists(st.tuples(st.floats(0, 1), st.integers(0, 40), st.integers(0, 40)), min_size=1, max_size=40),
    st.sampled_from([16, 64, 256]),
    st.sampled_from([0, 1, 4, 16]),
)
def test_many_small_edits_roundtrip_whatever_the_short_run_length(seed, size, edits, block, short):
    """Dense small edits, so most runs are short; the block-by-block check covers 0 to 16 blocks
    before the bulk check takes over."""
    old, new = spliced(seed, size, edits)
    out = io.BytesIO()
    with mock.patch.object(encoder, "_SHORT_RUN", short):
        stats = delta(signature_bytes(old, block), io.BytesIO(new), out, piece_size=4096)
    assert patch_bytes(old, out.getvalue()) == new
    assert stats.literal_bytes <= sum(ins for _, _, ins in edits) + (2 * len(edits) + 1) * block


@pytest.mark.parametrize("version", [2, 3])
def test_patch_output_crosses_the_write_buffer_in_one_long_copy(version):
    """A copy longer than the window is served in window-sized reads (2) or written directly (3)."""
    old = random.Random(1).randbytes(10_000)
    new = old[:3000] + b"edit" + old[3000:]
    with small_windows(64, 16):
        assert _roundtrip(old, new, 16, version=version) == new


@pytest.mark.parametrize("version", [2, 3])
def test_old_file_shorter_than_the_copy_is_a_mismatch(version):
    """The old file's size is checked first; a file that shrinks under the patch still cannot
    yield wrong bytes silently."""
    old = random.Random(2).randbytes(5_000)
    out = io.BytesIO()
    delta(signature_bytes(old, 16), io.BytesIO(old), out, version=version)

    class Shrunk(io.BytesIO):
        def seek(self, pos, whence=0):
            return len(old) if whence == 2 else super().seek(pos, whence)

    with small_windows(64, 16), pytest.raises(DeltaMismatch):
        patch(Shrunk(old[:2_000]), io.BytesIO(out.getvalue()), io.BytesIO())


class _Unmappable(io.RawIOBase):
    """A seekable stream with no file descriptor: the patcher copies it to a file it can map."""

    def __init__(self, data: bytes) -> None:
        self._inner = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        return self._inner.readinto(b)

    def seek(self, pos: int, whence: int = 0) -> int:
        return self._inner.seek(pos, whence)


@pytest.mark.parametrize("source", ["file", "stream", "bytesio", "unmappable file"])
def test_old_file_is_mapped_copied_or_borrowed(tmp_path, source, monkeypatch):
    """A file is memory-mapped; a stream without a descriptor is copied to a file first; a BytesIO
    lends its buffer; a file the system will not map is read. All rebuild the same bytes."""
    if source == "unmappable file":
        monkeypatch.setattr(patcher, "_map", lambda f: None)
    rng = random.Random(3)
    old = rng.randbytes(300_000)
    new = old[:100_000] + rng.randbytes(500) + old[100_000:250_000] + old[:4096]
    out = io.BytesIO()
    delta(signature_bytes(old, 512), io.BytesIO(new), out)
    path = tmp_path / "old"
    path.write_bytes(old)
    rebuilt = io.BytesIO()
    with open(path, "rb") as f:
        base = {"stream": _Unmappable(old), "bytesio": io.BytesIO(old)}.get(source, f)
        assert patch(base, io.BytesIO(out.getvalue()), rebuilt) == len(new)
    assert rebuilt.getvalue() == new
