"""Chunk objects: convergent AES-GCM within one folder, stored under their ciphertext's hash.

A chunk's key is HKDF(folder chunk key, sha256(plaintext)): equal plaintext in one folder gives
an equal object (so it is stored once), while another folder (another folder key) learns
nothing from it. As each key ever seals one plaintext, a fixed nonce is safe. The plaintext is
compressed first (zstd level 1, kept only when it saves at least 1/16, judged first on an
8 KiB sample: one flag byte says which), then padded to a multiple of 256 bytes (0x80 then zeros) so stored sizes are rounded. The object's
name is sha256 of its bytes: a reader checks that first (swap), then the tag (alteration,
truncation), then the plaintext hash the manifest recorded.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import threading
from dataclasses import dataclass
from typing import Any

import zstandard
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .errors import FormatError, IntegrityError
from .keys import FolderKeys

_INFO = b"hycloud-enc-1/chunk/"  # keys.subkey's label prefix, then "chunk/" and the hash

MAGIC = b"HCC1"
PAD = 256
NONCE = bytes(12)  # one key per plaintext: never reused for other bytes
DIR = ".hcchunks"


@dataclass(frozen=True)
class ChunkRef:
    """A chunk as a file's manifest names it: object name, plaintext hash, plaintext length."""

    name: str
    plain_sha256: str
    size: int

    def to_json(self) -> list[Any]:
        return [self.name, self.plain_sha256, self.size]

    @classmethod
    def from_json(cls, item: list[Any]) -> ChunkRef:
        name, digest, size = item
        return cls(str(name), str(digest), int(size))


def unpad(data: bytes) -> bytes:
    end = data.rstrip(b"\x00")
    if not end.endswith(b"\x80"):
        raise IntegrityError("chunk padding is wrong")
    return end[:-1]


RAW, ZSTD = b"\x00", b"\x01"
_COMPRESS = zstandard.ZstdCompressor(level=1, write_content_size=True, write_checksum=False)


SAMPLE = 8192


def _pays(data: bytes | memoryview) -> bool:
    return len(_COMPRESS.compress(data)) <= len(data) - len(data) // 16


def pack_into(plaintext: bytes, buffer: bytearray) -> int:
    """Flag byte + the plaintext (compressed when that pays: deterministic, so convergence
    holds) + padding, written at the start of `buffer`; returns the length. The first 8 KiB
    are tried first, so incompressible chunks (media, archives) cost little."""
    flag, body = RAW, plaintext
    if len(plaintext) >= 512 and _pays(memoryview(plaintext)[:SAMPLE]):
        squeezed = _COMPRESS.compress(plaintext)
        if len(squeezed) <= len(plaintext) - len(plaintext) // 16:
            flag, body = ZSTD, squeezed
    end, total = 1 + len(body), -(-(len(body) + 2) // PAD) * PAD
    if len(buffer) < total:
        buffer.extend(bytes(total - len(buffer)))
    buffer[0:1], buffer[1:end], buffer[end] = flag, body, 0x80
    buffer[end + 1 : total] = bytes(total - end - 1)
    return total


_SCRATCH = threading.local()  # reused buffers: a fresh 64 KiB one costs more than its AES-GCM


def _scratch(size: int) -> tuple[bytearray, bytearray]:
    held: tuple[bytearray, bytearray] | None = getattr(_SCRATCH, "buffers", None)
    if held is None or len(held[0]) < size:
        held = bytearray(size), bytearray(len(MAGIC) + size + 16)
        _SCRATCH.buffers = held
    return held


def unpack(packed: bytes, size: int) -> bytes:
    if packed[:1] == RAW:
        return packed[1:]
    if packed[:1] == ZSTD:
        try:
            return zstandard.ZstdDecompressor().decompress(packed[1:], max_output_size=size)
        except zstandard.ZstdError as err:
            raise IntegrityError("chunk does not decompress") from err
    raise FormatError("unknown chunk encoding")


@functools.lru_cache(maxsize=64)
def _prk(base: bytes) -> bytes:
    """HKDF-Extract of the folder's chunk key (no salt: 32 zero bytes), once per folder."""
    return hmac.digest(bytes(32), base, "sha256")


def chunk_key(fk: FolderKeys, plain_sha256: bytes) -> bytes:
    """HKDF-SHA256(chunk key, info "hycloud-enc-1/chunk/<hex>") to 32 bytes, exactly `keys.subkey`'s
    answer (one Expand block: HMAC(PRK, info || 0x01)), with the Extract step done once per folder:
    building an HKDF object per chunk cost about a tenth of a seal."""
    info = _INFO + plain_sha256.hex().encode() + b"\x01"
    return hmac.digest(_prk(fk.chunks), info, "sha256")


def _key(fk: FolderKeys, plain_sha256: bytes) -> AESGCM:
    return AESGCM(chunk_key(fk, plain_sha256))


def seal(fk: FolderKeys, plaintext: bytes) -> tuple[ChunkRef, bytes]:
    """(reference, object bytes) of one chunk of plaintext."""
    digest = hashlib.sha256(plaintext).digest()
    packed, out = _scratch(len(plaintext) + 2 * PAD)
    total = pack_into(plaintext, packed)
    end = len(MAGIC) + total + 16
    out[: len(MAGIC)] = MAGIC
    view = memoryview(out)
    _key(fk, digest).encrypt_into(
        NONCE, memoryview(packed)[:total], MAGIC + fk.folder_id, view[len(MAGIC) : end]
    )
    blob = bytes(view[:end])
    return ChunkRef(hashlib.sha256(blob).hexdigest(), digest.hex(), len(plaintext)), blob


def open_(fk: FolderKeys, ref: ChunkRef, blob: bytes) -> bytes:
    """The plaintext of `blob`, which must be exactly the object `ref` names."""
    if hashlib.sha256(blob).hexdigest() != ref.name:
        raise IntegrityError(
            f"chunk {ref.name[:16]}… is not the object its manifest names (altered or swapped)"
        )
    if not blob.startswith(MAGIC):
        raise FormatError("not a chunk object")
    try:
        padded = _key(fk, bytes.fromhex(ref.plain_sha256)).decrypt(
            NONCE, memoryview(blob)[len(MAGIC) :], MAGIC + fk.folder_id
        )
    except InvalidTag as err:
        raise IntegrityError(f"chunk {ref.name[:16]}… failed authentication") from err
    plaintext = unpack(unpad(padded), ref.size)
    if len(plaintext) != ref.size or hashlib.sha256(plaintext).hexdigest() != ref.plain_sha256:
        raise IntegrityError(f"chunk {ref.name[:16]}… does not hold what its manifest recorded")
    return plaintext


def object_path(name: str) -> str:
    """Where a chunk lives, relative to the encrypted folder's root (one flat folder: one listing
    tells which chunks the folder has)."""
    return f"{DIR}/{name}"
