"""Version-aware (zstd patch-from) delta: exact round trips across windows, bad input refused."""

from __future__ import annotations

import io
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hycloud_core.delta import versioned
from hycloud_core.delta.errors import DeltaFormatError, DeltaMismatch


def roundtrip(base: bytes, new: bytes, window: int = 4096, margin: int = 1024) -> bytes:
    out = io.BytesIO()
    versioned.encode(io.BytesIO(base), len(base), io.BytesIO(new), len(new), out, window, margin)
    out.seek(0)
    got = io.BytesIO()
    assert versioned.apply(io.BytesIO(base), out, got) == len(new)
    return got.getvalue()


@st.composite
def edited(draw):
    base = draw(st.binary(max_size=20_000))
    new = bytearray(base)
    for _ in range(draw(st.integers(0, 6))):
        at = draw(st.integers(0, len(new)))
        kind = draw(st.sampled_from(["insert", "delete", "overwrite"]))
        blob = draw(st.binary(min_size=1, max_size=300))
        if kind == "insert":
            new[at:at] = blob
        elif kind == "delete":
            del new[at : at + len(blob)]
        else:
            new[at : at + len(blob)] = blob
    return base, bytes(new)


@given(edited())
@settings(max_examples=150, deadline=None)
def test_round_trip_is_exact(pair):
    base, new = pair
    assert roundtrip(base, new) == new


def test_small_edit_gives_small_delta():
    base = os.urandom(200_000)
    new = base[:1000] + b"changed" + base[1000:]
    out = io.BytesIO()
    size = versioned.encode(io.BytesIO(base), len(base), io.BytesIO(new), len(new), out, 64 * 1024, 16 * 1024)
    assert size < 2_000


def test_wrong_base_is_detected():
    base, other = os.urandom(50_000), os.urandom(50_000)
    new = base[:25_000] + b"x" + base[25_000:]
    out = io.BytesIO()
    versioned.encode(io.BytesIO(base), len(base), io.BytesIO(new), len(new), out, 8192, 2048)
    out.seek(0)
    with pytest.raises((DeltaMismatch, DeltaFormatError)):
        versioned.apply(io.BytesIO(other), out, io.BytesIO())


@pytest.mark.parametrize("cut", [0, 3, 40, 70])
def test_truncated_delta_is_refused(cut):
    base = os.urandom(30_000)
    new = base + b"tail"
    out = io.BytesIO()
    versioned.encode(io.BytesIO(base), len(base), io.BytesIO(new), len(new), out, 8192, 2048)
    with pytest.raises((DeltaFormatError, DeltaMismatch)):
        versioned.apply(io.BytesIO(base), io.BytesIO(out.getvalue()[:cut]), io.BytesIO())


def test_a_window_declaring_another_size_is_refused_before_it_is_decoded():
    """A hostile delta whose frame claims a huge size must not make the client allocate it."""
    import hashlib

    import zstandard

    new = b"n" * 1000
    frame = zstandard.ZstdCompressor(write_content_size=True).compress(b"x" * (1 << 20))
    header = versioned._HEADER.pack(
        versioned.MAGIC, versioned.VERSION, len(new), 0, 4096, 1024, hashlib.sha256(new).digest()
    )
    delta = header + versioned._LEN.pack(len(frame)) + frame
    with pytest.raises(DeltaFormatError, match="wrong length"):
        versioned.apply(io.BytesIO(b""), io.BytesIO(delta), io.BytesIO())
