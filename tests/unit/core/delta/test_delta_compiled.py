"""The compiled delta loops (native.c) against the numpy code they replace: same values, same deltas."""

import importlib
import io
import random

import numpy as np
import pytest
from hypothesis import given, settings

from hycloud_core.delta import compiled, encoder, rolling
from hycloud_core.delta.rolling import all_window_sums, numpy_window_sums, weak_sum
from hycloud_core.delta.signature import SigIndex, compute

from .conftest import BLOCK_SIZES, edited_versions

# the module, not the function of that name the package exports
signature = importlib.import_module("hycloud_core.delta.signature")


def test_the_compiled_loops_are_built():
    """`make setup` builds them; without them every other test here would pass on numpy alone."""
    assert compiled.lib is not None


@pytest.mark.parametrize("width", [1, 3, 64, 512, 4096])
def test_compiled_window_sums_equal_numpys(width):
    rng = random.Random(width)
    # one lane below 16 windows' worth, four lanes from there (with and without a remainder)
    for n in sorted({0, 1, 5, 16 * width - 1, 16 * width, 16 * width + 3, 70_001}):
        data = rng.randbytes(n + width - 1 + rng.randrange(3))
        got = all_window_sums(data, width, n)
        assert got.dtype == np.uint32 and len(got) == n
        assert np.array_equal(got, numpy_window_sums(data, width, n)), (width, n)
        for k in {0, n // 3, n // 2, n - 1} if n else ():
            assert int(got[k]) == weak_sum(data[k : k + width])


@pytest.mark.parametrize("block", [16, 512])
def test_compiled_candidates_equal_numpys(block):
    rng = random.Random(block)
    old = rng.randbytes(block * 300)
    old += old[: block * 20]  # repeated blocks: equal weak sums, the first slot is reported
    index = SigIndex(compute(io.BytesIO(old), block))
    new = bytearray(rng.randbytes(block * 200))
    for at in range(0, len(new) - 3 * block, 7 * block + 5):  # old blocks planted at odd offsets
        j = rng.randrange(index.n_full)
        new[at : at + block] = old[j * block : (j + 1) * block]
    weaks = all_window_sums(bytes(new), block, len(new) - block + 1)
    found = 0
    for lo, hi in [(0, len(weaks)), (100, 4196), (len(weaks) - 10, len(weaks)), (5, 6)]:
        got = index.candidates(weaks[lo:hi], lo)
        assert got == index.numpy_candidates(weaks[lo:hi], lo)
        assert all(index.sorted_weak[s] == weaks[k] for k, s in zip(*got, strict=True))
        found += len(got[0])
    assert found > 20


@pytest.fixture
def numpy_only(monkeypatch):
    """The engine as it runs where the compiled loops are not built."""
    monkeypatch.setattr(rolling, "lib", None)
    monkeypatch.setattr(signature, "lib", None)


def _delta(old: bytes, new: bytes, block: int) -> bytes:
    out = io.BytesIO()
    encoder.delta(compute(io.BytesIO(old), block), io.BytesIO(new), out, piece_size=64)
    return out.getvalue()


@settings(max_examples=60, deadline=None)
@given(versions=edited_versions())
def test_deltas_are_the_same_bytes_with_and_without_the_compiled_loops(versions):
    old, new = versions
    with pytest.MonkeyPatch.context() as mp:
        compiled_deltas = [_delta(old, new, b) for b in BLOCK_SIZES]
        mp.setattr(rolling, "lib", None)
        mp.setattr(signature, "lib", None)
        assert [_delta(old, new, b) for b in BLOCK_SIZES] == compiled_deltas


def test_the_numpy_engine_still_roundtrips(numpy_only):
    from hycloud_core.delta import patch_bytes

    rng = random.Random(7)
    old = rng.randbytes(50_000)
    new = old[:10_000] + b"inserted" + old[10_000:40_000] + old[45_000:]
    for block in (64, 512):
        assert patch_bytes(old, _delta(old, new, block)) == new
