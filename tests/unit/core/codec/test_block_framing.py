"""Block headers: bad magic, versions, truncation and impossible fields fail clearly."""

import struct

import pytest

from hycloud_core.codec.erasure import encode_chunk
from hycloud_core.codec.erasure_errors import (
    BadMagicError,
    CorruptBlockError,
    ErasureError,
    TruncatedBlockError,
    UnsupportedVersionError,
)
from hycloud_core.codec.framing import HEADER_SIZE, open_block, parse_block_header

BLOCK = encode_chunk(b"framing test " * 50, 9, 4, 2)[3]


def test_bad_magic():
    with pytest.raises(BadMagicError):
        parse_block_header(b"XXXX" + BLOCK[4:])
    with pytest.raises(BadMagicError):
        parse_block_header(b"")


def test_newer_version_is_refused():
    with pytest.raises(UnsupportedVersionError):
        parse_block_header(BLOCK[:4] + b"\x02" + BLOCK[5:])


@pytest.mark.parametrize("length", [5, HEADER_SIZE - 1])
def test_truncated_header(length):
    with pytest.raises(TruncatedBlockError):
        parse_block_header(BLOCK[:length])


def test_truncated_and_overlong_payload():
    with pytest.raises(TruncatedBlockError):
        open_block(BLOCK[:-1])
    with pytest.raises(TruncatedBlockError):
        open_block(BLOCK + b"\0")


def test_header_field_change_breaks_hash():
    header = bytearray(BLOCK)
    header[7] = 2  # block index 3 -> 2: still a valid header, but not this block
    assert parse_block_header(bytes(header)).block_index == 2
    with pytest.raises(CorruptBlockError):
        open_block(bytes(header))


def test_impossible_code_in_header():
    bad = bytearray(BLOCK)
    bad[6] = 5  # k = 5 > n = 4
    with pytest.raises(ErasureError):
        parse_block_header(bytes(bad))


def test_padding_must_fit_k():
    bad = bytearray(BLOCK)
    struct.pack_into(">I", bad, 24, 7)  # padding field >= k
    with pytest.raises(ErasureError):
        parse_block_header(bytes(bad))


def test_open_block_returns_payload_view():
    header, payload = open_block(BLOCK)
    assert bytes(payload) == BLOCK[HEADER_SIZE:]
    assert len(payload) == header.payload_length
