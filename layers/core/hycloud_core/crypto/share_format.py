"""The share format (HCS1): one file re-encrypted whole under a fresh key that travels in a link.

The web app decrypts it with WebCrypto (web/decrypt.js), so it uses AES-256-GCM only and fixed
little structure. The key is 32 random bytes, used for this one object, never stored anywhere.

    header  = b"HCS1" | segment size (u32 BE) | nonce prefix (8 random bytes)        16 bytes
    meta    = length (u32 BE) | AES-GCM(JSON {"name", "size"}) of that length
    segment = AES-GCM(up to `segment size` bytes of the file), the last one shorter

Record i (the meta is record 0, segment j is record j + 1) is sealed with nonce
`prefix | i (u32 BE)` and associated data `header | i (u32 BE) | final (1 byte)`, where final is
1 on the last segment only. So an altered byte, a changed header, two segments swapped, or a
stream cut short (its last record was sealed as not final) all fail a tag. An empty file still
has one (empty, final) segment.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .errors import FormatError, IntegrityError

MAGIC = b"HCS1"
HEADER_LEN = 16
TAG_LEN = 16
KEY_LEN = 32
SEGMENT = 1 << 20
MIN_SEGMENT, MAX_SEGMENT = 1 << 12, 1 << 24
MAX_META = 4096


@dataclass(frozen=True)
class Shared:
    name: str
    data: bytes


def new_key() -> bytes:
    return os.urandom(KEY_LEN)


def encode(key: bytes, name: str, data: bytes, segment: int = SEGMENT) -> bytes:
    """The whole object: header, sealed name and size, then the sealed segments."""
    if not MIN_SEGMENT <= segment <= MAX_SEGMENT:
        raise FormatError(f"a segment is {MIN_SEGMENT} to {MAX_SEGMENT} bytes")
    header = MAGIC + struct.pack(">I", segment) + os.urandom(8)
    aead = AESGCM(key)
    meta = aead.encrypt(_nonce(header, 0), _meta(name, len(data)), _aad(header, 0, False))
    parts = [header, struct.pack(">I", len(meta)), meta]
    pieces = [data[i : i + segment] for i in range(0, len(data), segment)] or [b""]
    for j, piece in enumerate(pieces):
        final = j == len(pieces) - 1
        parts.append(aead.encrypt(_nonce(header, j + 1), piece, _aad(header, j + 1, final)))
    return b"".join(parts)


def decode(key: bytes, blob: bytes) -> Shared:
    """The file's name and bytes; anything altered, cut, reordered or extended raises."""
    header, meta_len = _header(blob)
    aead = AESGCM(key)
    start = HEADER_LEN + 4
    meta = json.loads(_open(aead, header, 0, False, blob[start : start + meta_len]))
    segment = struct.unpack(">I", header[4:8])[0]
    out = bytearray()
    for index, final, sealed in _records(blob[start + meta_len :], segment + TAG_LEN):
        out += _open(aead, header, index, final, sealed)
    if len(out) != meta.get("size"):
        raise IntegrityError("the shared file's length differs from what its sender sealed")
    return Shared(str(meta["name"]), bytes(out))


def _header(blob: bytes) -> tuple[bytes, int]:
    if len(blob) < HEADER_LEN + 4 or blob[:4] != MAGIC:
        raise FormatError("not a HyCloud share (HCS1) object")
    segment = struct.unpack(">I", blob[4:8])[0]
    meta_len = struct.unpack(">I", blob[HEADER_LEN : HEADER_LEN + 4])[0]
    if not MIN_SEGMENT <= segment <= MAX_SEGMENT or not TAG_LEN <= meta_len <= MAX_META:
        raise FormatError("the share's header is out of range")
    if len(blob) < HEADER_LEN + 4 + meta_len:
        raise IntegrityError("the shared file is cut short")
    return blob[:HEADER_LEN], meta_len


def _records(body: bytes, sealed_len: int) -> Iterator[tuple[int, bool, bytes]]:
    """(record index, final, sealed bytes) of each segment; a missing last segment still fails."""
    count = max(1, -(-len(body) // sealed_len))
    for j in range(count):
        yield j + 1, j == count - 1, body[j * sealed_len : (j + 1) * sealed_len]


def _open(aead: AESGCM, header: bytes, index: int, final: bool, sealed: bytes) -> bytes:
    try:
        return aead.decrypt(_nonce(header, index), sealed, _aad(header, index, final))
    except (InvalidTag, ValueError):
        raise IntegrityError(
            f"record {index} of the shared file failed its check: altered, reordered or cut short"
        ) from None


def _meta(name: str, size: int) -> bytes:
    return json.dumps({"name": name, "size": size}, ensure_ascii=False).encode()


def _nonce(header: bytes, index: int) -> bytes:
    return header[8:16] + struct.pack(">I", index)


def _aad(header: bytes, index: int, final: bool) -> bytes:
    return header + struct.pack(">IB", index, int(final))
