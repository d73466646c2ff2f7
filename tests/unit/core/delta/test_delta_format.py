import io
import struct

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from hycloud_core.delta import (
    CANDIDATE_SIZES,
    DeltaError,
    DeltaFormatError,
    delta_bytes,
    patch_bytes,
    signature_bytes,
)
from hycloud_core.delta.signature import Signature, encoded_size_bound, fitting_block_size

OLD = bytes(range(256)) * 40 + b"the old tail"
NEW = bytes(range(256)) * 20 + b"something new in the middle" + bytes(range(256)) * 20
SIG = signature_bytes(OLD, 64)
SIG_RAW = Signature.decode(SIG).encode(compress=False)
DELTA = delta_bytes(SIG, NEW)


@pytest.mark.parametrize("sig", [SIG, SIG_RAW])
def test_every_truncated_signature_is_rejected(sig):
    for n in range(len(sig)):
        with pytest.raises(DeltaFormatError):
            Signature.decode(sig[:n])


def test_signature_with_extra_bytes_is_rejected():
    with pytest.raises(DeltaFormatError, match="body"):
        Signature.decode(SIG_RAW + b"\0")


@pytest.mark.parametrize(
    "offset,value,message",
    [
        (0, b"X", "magic"),
        (4, b"\x02", "version"),
        (5, b"\x80", "flags"),
        (10, b"\x00", "strong"),
        (10, b"\x21", "strong"),
    ],
)
def test_garbled_signature_header_is_rejected(offset, value, message):
    bad = SIG_RAW[:offset] + value + SIG_RAW[offset + 1 :]
    with pytest.raises(DeltaFormatError, match=message):
        Signature.decode(bad)


def test_zero_block_size_is_rejected():
    bad = SIG_RAW[:6] + struct.pack("<I", 0) + SIG_RAW[10:]
    with pytest.raises(DeltaFormatError, match="block size"):
        Signature.decode(bad)


def test_every_truncated_delta_is_rejected():
    for n in range(len(DELTA)):
        with pytest.raises(DeltaFormatError):
            patch_bytes(OLD, DELTA[:n])


def _recompress(raw: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(raw)


def _raw_delta() -> bytes:
    return zstandard.ZstdDecompressor().stream_reader(io.BytesIO(DELTA)).read()


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda r: b"XXXX" + r[4:], "magic"),
        (lambda r: r[:4] + b"\x09" + r[5:], "version"),
        (lambda r: r + b"\x00", "trailing"),
        (lambda r: r[:18] + b"\x07" + r[19:], "unknown delta op"),
        (lambda r: r[:18] + b"\x02\xfe\x7f\x01" + r[18:], "outside the old file"),
    ],
)
def test_garbled_delta_content_is_rejected(mutate, message):
    with pytest.raises(DeltaFormatError, match=message):
        patch_bytes(OLD, _recompress(mutate(_raw_delta())))


def test_not_zstd_is_rejected():
    with pytest.raises(DeltaFormatError):
        patch_bytes(OLD, b"this is not a zstd frame at all")


@settings(max_examples=200, deadline=None)
@given(st.integers(0, len(DELTA) - 1), st.integers(1, 255))
def test_flipped_byte_never_yields_wrong_output(pos, xor):
    bad = bytearray(DELTA)
    bad[pos] ^= xor
    try:
        out = patch_bytes(OLD, bytes(bad))
    except DeltaError:
        return
    assert out == NEW  # a flip in a field that does not matter is the only way through


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=20_000), st.sampled_from([1, 7, 64, 256, 1024, 4096]), st.booleans())
def test_signature_size_bound_holds_and_is_reached_without_compression(data, block, compress):
    sig = Signature.decode(signature_bytes(data, block))
    bound = encoded_size_bound(len(data), block)
    assert len(sig.encode(compress)) <= bound
    if not compress:
        assert len(sig.encode(False)) == bound


def test_fitting_block_size_takes_the_next_size_whose_list_fits():
    sizes = CANDIDATE_SIZES
    size = 30 * 2**20
    assert fitting_block_size(size, 1024, 4 * 2**20, sizes) == 1024
    fit = fitting_block_size(size, 1024, 64 * 1024, sizes)
    assert fit is not None and fit > 1024 and encoded_size_bound(size, fit) <= 64 * 1024
    assert encoded_size_bound(size, sizes[sizes.index(fit) - 1]) > 64 * 1024
    assert fitting_block_size(size, 1024, 1024, sizes) is None
    assert fitting_block_size(0, 256, 64, sizes) == 256
