"""Manifests: a file's chunk list and a folder's name map, sealed, bound to their path, versioned.

Layout: b"HCM1" | kind (b"F" file, b"D" folder) | counter (8 bytes, big-endian) | nonce (12) |
AES-GCM ciphertext | HMAC-SHA256 (32). The HMAC (under the folder's MAC key) covers everything
before it plus the folder id and the plaintext path, so a manifest moved to another path, cut
short or edited is refused before decryption. The counter grows with every write of that path;
a reader that has seen a higher one refuses the older (a rolled-back or replayed manifest).
The JSON inside is padded with spaces to a multiple of 256 bytes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import struct
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .chunks import ChunkRef
from .errors import FormatError, IntegrityError, RollbackError
from .keys import FolderKeys

MAGIC = b"HCM1"
FILE, FOLDER = b"F", b"D"
DIR_MAP = ".hcdir"  # a folder's name map, inside the (stored) folder it describes
_HEAD = struct.Struct(">4s1sQ12s")
_MAC = 32
_PAD = 256


@dataclass(frozen=True)
class FileManifest:
    size: int
    sha256: str
    chunks: list[ChunkRef]
    mtime: float | None = None
    mode: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "sha256": self.sha256,
            "mtime": self.mtime,
            "mode": self.mode,
            "chunks": [c.to_json() for c in self.chunks],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileManifest:
        refs = [ChunkRef.from_json(item) for item in data["chunks"]]
        if sum(r.size for r in refs) != data["size"]:
            raise IntegrityError("a file manifest's chunks do not add up to its size")
        return cls(int(data["size"]), str(data["sha256"]), refs, data.get("mtime"), data.get("mode"))


@dataclass(frozen=True)
class DirMap:
    """A folder's plaintext names and what each is: {name: {"t": "file" | "dir", "v": the file
    manifest's counter, "size", "sha256", "mtime"}}; a reader requires a file's manifest to be
    at least version "v", so an older one served in its place is refused."""

    entries: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"entries": dict(sorted(self.entries.items()))}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DirMap:
        entries = data["entries"]
        if not all(isinstance(e, dict) and e.get("t") in ("file", "dir") for e in entries.values()):
            raise FormatError("a name map entry is neither a file nor a folder")
        return cls(dict(entries))


@dataclass(frozen=True)
class Opened:
    counter: int
    body: dict[str, Any]


def _tag(fk: FolderKeys, head_and_ct: bytes, path: str) -> bytes:
    message = head_and_ct + fk.folder_id + b"\x00" + path.encode()
    return hmac.new(fk.macs, message, hashlib.sha256).digest()


def seal(fk: FolderKeys, kind: bytes, path: str, counter: int, body: dict[str, Any]) -> bytes:
    """The stored bytes of a manifest of `kind` at plaintext `path` (relative to the folder)."""
    text = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * (-len(text) % _PAD)
    nonce = os.urandom(12)
    head = _HEAD.pack(MAGIC, kind, counter, nonce)
    sealed = head + AESGCM(fk.manifests).encrypt(nonce, text, head + fk.folder_id + path.encode())
    return sealed + _tag(fk, sealed, path)


def counter_of(blob: bytes) -> int:
    """The counter a stored manifest claims (unauthenticated: only to choose the next one)."""
    if len(blob) < _HEAD.size or not blob.startswith(MAGIC):
        raise FormatError("not a manifest")
    return int(_HEAD.unpack_from(blob)[2])


def open_(fk: FolderKeys, kind: bytes, path: str, blob: bytes, seen: int = 0) -> Opened:
    """The body of a manifest, refused if altered, moved, cut, of the wrong kind, or older than
    `seen` (the highest counter this client has read or written for the path)."""
    if len(blob) < _HEAD.size + 16 + _MAC or not blob.startswith(MAGIC):
        raise IntegrityError(f"manifest of {path or '/'} is cut short or not a manifest")
    sealed, tag = blob[:-_MAC], blob[-_MAC:]
    if not hmac.compare_digest(_tag(fk, sealed, path), tag):
        raise IntegrityError(f"manifest of {path or '/'} failed authentication (altered, moved or truncated)")
    _, got_kind, counter, nonce = _HEAD.unpack_from(sealed)
    if got_kind != kind:
        raise IntegrityError(f"manifest of {path or '/'} is of the wrong kind")
    if counter < seen:
        raise RollbackError(
            f"manifest of {path or '/'} is version {counter}, older than version {seen} already seen"
        )
    head = sealed[: _HEAD.size]
    try:
        text = AESGCM(fk.manifests).decrypt(nonce, sealed[_HEAD.size :], head + fk.folder_id + path.encode())
    except InvalidTag as err:
        raise IntegrityError(f"manifest of {path or '/'} failed decryption") from err
    return Opened(int(counter), json.loads(text))
