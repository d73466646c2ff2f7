"""The share format (HCS1): round trip, and every altered, cut, reordered or extended object refused."""

from __future__ import annotations

import json
import os
import struct

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from hycloud_core.crypto import share_format as sf
from hycloud_core.crypto.errors import FormatError, IntegrityError

SEG = 4096
KEY = bytes(range(32))
DATA = b"SHARE-PLAINTEXT-MARKER " * 700  # 16,100 bytes: four segments of 4 KiB, the last short
SEALED = SEG + sf.TAG_LEN


def _body_start(blob: bytes) -> int:
    return sf.HEADER_LEN + 4 + struct.unpack(">I", blob[sf.HEADER_LEN : sf.HEADER_LEN + 4])[0]


def test_round_trip_keeps_name_and_bytes_and_hides_them():
    blob = sf.encode(KEY, "réport 1.txt", DATA, segment=SEG)
    got = sf.decode(KEY, blob)
    assert (got.name, got.data) == ("réport 1.txt", DATA)
    assert b"SHARE-PLAINTEXT-MARKER" not in blob and "réport".encode() not in blob
    assert len(blob) == _body_start(blob) + len(DATA) + 4 * sf.TAG_LEN


@pytest.mark.parametrize("size", [0, 1, SEG, SEG + 1, 3 * SEG])
def test_sizes_at_the_segment_edges(size):
    data = os.urandom(size)
    assert sf.decode(KEY, sf.encode(KEY, "f", data, segment=SEG)).data == data


def test_the_layout_is_the_documented_one():
    """Decoded here from the docstring's layout alone, as web/decrypt.js does."""
    blob = sf.encode(KEY, "a.bin", DATA, segment=SEG)
    header, prefix = blob[:16], blob[8:16]
    assert blob[:4] == b"HCS1" and struct.unpack(">I", blob[4:8])[0] == SEG
    aead = AESGCM(KEY)
    meta_len = struct.unpack(">I", blob[16:20])[0]
    meta = aead.decrypt(prefix + struct.pack(">I", 0), blob[20 : 20 + meta_len], header + bytes(5))
    assert json.loads(meta) == {"name": "a.bin", "size": len(DATA)}
    body, out = blob[20 + meta_len :], b""
    for j in range(4):
        aad = header + struct.pack(">IB", j + 1, int(j == 3))
        out += aead.decrypt(prefix + struct.pack(">I", j + 1), body[j * SEALED : (j + 1) * SEALED], aad)
    assert out == DATA


def test_fresh_nonce_prefix_each_time():
    assert sf.encode(KEY, "f", DATA, segment=SEG)[8:16] != sf.encode(KEY, "f", DATA, segment=SEG)[8:16]


def test_wrong_key_refused():
    with pytest.raises(IntegrityError):
        sf.decode(bytes(32), sf.encode(KEY, "f", DATA, segment=SEG))


def test_tampered_segment_refused():
    blob = bytearray(sf.encode(KEY, "f", DATA, segment=SEG))
    blob[_body_start(blob) + SEALED + 10] ^= 1
    with pytest.raises(IntegrityError, match="record 2"):
        sf.decode(KEY, bytes(blob))


def test_tampered_header_refused():
    blob = bytearray(sf.encode(KEY, "f", DATA, segment=SEG))
    blob[9] ^= 1  # the nonce prefix, part of every record's associated data
    with pytest.raises(IntegrityError):
        sf.decode(KEY, bytes(blob))


@pytest.mark.parametrize("cut", [1, sf.TAG_LEN, len(DATA) - 3 * SEG + sf.TAG_LEN])
def test_truncated_refused(cut):
    """Cut inside the last segment, or exactly at a segment boundary (a whole segment dropped)."""
    blob = sf.encode(KEY, "f", DATA, segment=SEG)
    with pytest.raises(IntegrityError):
        sf.decode(KEY, blob[:-cut])


def test_cut_to_the_header_refused():
    blob = sf.encode(KEY, "f", DATA, segment=SEG)
    with pytest.raises(IntegrityError):
        sf.decode(KEY, blob[: _body_start(blob)])


def test_reordered_segments_refused():
    blob = sf.encode(KEY, "f", DATA, segment=SEG)
    start = _body_start(blob)
    first, second = blob[start : start + SEALED], blob[start + SEALED : start + 2 * SEALED]
    swapped = blob[:start] + second + first + blob[start + 2 * SEALED :]
    with pytest.raises(IntegrityError, match="record 1"):
        sf.decode(KEY, swapped)


def test_extended_refused():
    blob = sf.encode(KEY, "f", os.urandom(SEG), segment=SEG)
    with pytest.raises(IntegrityError):
        sf.decode(KEY, blob + sf.encode(KEY, "f", b"x", segment=SEG)[-17:])


def test_not_a_share_refused():
    with pytest.raises(FormatError):
        sf.decode(KEY, b"HCC1" + bytes(40))
    with pytest.raises(FormatError):
        sf.encode(KEY, "f", b"", segment=100)
