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
from hycloud_core.delta.wire import (
    DELTA_HEADER,
    DELTA_MAGIC,
    OP_COPY,
    OP_LITERAL,
    VERSION,
    put_varint,
    result_hash,
    zigzag,
)

OLD = bytes(range(256)) * 40 + b"the old tail"
NEW = bytes(range(256)) * 20 + b"something new in the middle" + bytes(range(256)) * 20
SIG = signature_bytes(OLD, 64)
SIG_RAW = Signature.decode(SIG).encode(compress=False)
DELTA = delta_bytes(SIG, NEW)
DELTA_V2 = delta_bytes(SIG, NEW, version=2)


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


@pytest.mark.parametrize("whole", [DELTA, DELTA_V2])
def test_every_truncated_delta_is_rejected(whole):
    for n in range(len(whole)):
        with pytest.raises(DeltaFormatError):
            patch_bytes(OLD, whole[:n])


def test_both_layouts_rebuild_the_new_file():
    assert patch_bytes(OLD, DELTA) == patch_bytes(OLD, DELTA_V2) == NEW


def _recompress(raw: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(raw)


def _raw_delta(whole: bytes = DELTA_V2) -> bytes:
    return zstandard.ZstdDecompressor().stream_reader(io.BytesIO(whole)).read()


def _chunk(ops: list[tuple], header: tuple[int, ...] | None = None) -> bytes:
    """A version 3 chunk from ("copy", zigzagged move, count) and ("lit", bytes) ops; `header`
    overrides its four counts."""
    kinds, firsts, counts, literals = bytearray(), bytearray(), bytearray(), bytearray()
    for op in ops:
        if op[0] == "copy":
            kinds.append(OP_COPY)
            put_varint(op[1], firsts)
            put_varint(op[2], counts)
        else:
            kinds.append(op[0] if isinstance(op[0], int) else OP_LITERAL)
            put_varint(len(op[1]), firsts)
            literals += op[1]
    copies = sum(1 for op in ops if op[0] == "copy")
    out = bytearray()
    for value in header or (len(kinds), copies, len(firsts) + len(counts), len(literals)):
        put_varint(value, out)
    return bytes(out + kinds + firsts + counts + literals)


def _v3(*chunks: bytes, result: bytes = NEW) -> bytes:
    raw = bytearray(DELTA_HEADER.pack(DELTA_MAGIC, VERSION, 0, 64, len(OLD)))
    for c in chunks:
        raw += c
    raw.append(0)
    put_varint(len(result), raw)
    check = result_hash()
    check.update(result)
    return _recompress(bytes(raw + check.digest()))


def test_hand_made_v3_delta_applies():
    """Three chunks: the expected block carries over from one chunk to the next."""
    cut = 20 * 256
    copy_to_cut = ("copy", zigzag(0), cut // 64)
    rest = NEW[cut:]
    moved = ("copy", zigzag(0 - cut // 64), 20 * 256 // 64)  # back to block 0
    whole = _v3(_chunk([copy_to_cut]), _chunk([("lit", rest[:27])]), _chunk([moved]))
    assert patch_bytes(OLD, whole) == NEW


@pytest.mark.parametrize(
    "chunk,message",
    [
        (_chunk([(7, b"abc")]), "unknown delta op"),
        (_chunk([("copy", zigzag(len(OLD) // 64 + 1), 1)]), "outside the old file"),
        (_chunk([("copy", zigzag(-1), 1)]), "outside the old file"),
        (_chunk([("copy", 0, 0)]), "outside the old file"),
        (_chunk([("lit", b"abc")], header=(1, 0, 1, 2)), "literal lengths"),
        (_chunk([("lit", b"abc"), ("copy", 0, 1)], header=(2, 1, 2, 3)), "op column"),
        (_chunk([("lit", b"abc")], header=(1, 1, 1, 3)), "op column|disagree"),
        (_chunk([("lit", b"a")], header=(2**21, 0, 1, 1)), "too large"),
        (_chunk([("lit", b"a")], header=(1, 0, 1, 2**25)), "too large"),
        (_chunk([("lit", b"")]), "literal lengths"),
    ],
)
def test_garbled_v3_chunk_is_rejected(chunk, message):
    with pytest.raises(DeltaFormatError, match=message):
        patch_bytes(OLD, _v3(chunk))


def test_v3_trailing_bytes_are_rejected():
    with pytest.raises(DeltaFormatError, match="trailing"):
        patch_bytes(OLD, _recompress(_raw_delta(DELTA) + b"\x00"))


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
def test_garbled_v2_delta_content_is_rejected(mutate, message):
    with pytest.raises(DeltaFormatError, match=message):
        patch_bytes(OLD, _recompress(mutate(_raw_delta())))


def test_not_zstd_is_rejected():
    with pytest.raises(DeltaFormatError):
        patch_bytes(OLD, b"this is not a zstd frame at all")


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([DELTA, DELTA_V2]), st.data(), st.integers(1, 255))
def test_flipped_byte_never_yields_wrong_output(whole, data, xor):
    pos = data.draw(st.integers(0, len(whole) - 1))
    bad = bytearray(whole)
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
