"""Keys: passphrase or key file -> user key (scrypt) -> folder key (AES-GCM wrapped) -> subkeys.

A folder has one random 256-bit key. Each user holding it has a slot: the folder key sealed with
AES-GCM under that user's key, which scrypt derives from the passphrase (or the key file's bytes)
and a per-slot random salt. Rotating a passphrase re-seals the same folder key, so no content is
re-encrypted. Every other key is derived from the folder key with HKDF-SHA256 and a fixed label.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from .errors import FormatError, WrongKeyError

KEY_BYTES = 32
SALT_BYTES = 16
NONCE_BYTES = 12


@dataclass(frozen=True)
class KdfParams:
    """scrypt cost: n=2**15, r=8 (32 MiB, about 0.1 s) by default; tests pass cheaper ones."""

    n: int = 2**15
    r: int = 8
    p: int = 1

    def to_json(self) -> dict[str, int | str]:
        return {"alg": "scrypt", "n": self.n, "r": self.r, "p": self.p}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> KdfParams:
        if data.get("alg") != "scrypt":
            raise FormatError(f"unknown key derivation {data.get('alg')!r}")
        values = [data.get(k) for k in ("n", "r", "p")]
        ints = [v for v in values if isinstance(v, int) and v > 0]
        if len(ints) != 3:
            raise FormatError("bad scrypt parameters")
        return cls(*ints)


def user_key(secret: bytes, salt: bytes, params: KdfParams) -> bytes:
    """The user's key from a passphrase (UTF-8) or a key file's bytes."""
    if not secret:
        raise WrongKeyError("an empty passphrase or key file opens nothing")
    return Scrypt(salt=salt, length=KEY_BYTES, n=params.n, r=params.r, p=params.p).derive(secret)


def new_folder_key() -> bytes:
    return os.urandom(KEY_BYTES)


def wrap(folder_key: bytes, key: bytes, context: bytes) -> dict[str, str]:
    """The folder key sealed under a user key; `context` (folder id + slot) is authenticated."""
    nonce = os.urandom(NONCE_BYTES)
    sealed = AESGCM(key).encrypt(nonce, folder_key, context)
    return {"nonce": b64(nonce), "wrapped": b64(sealed)}


def unwrap(slot: dict[str, str], key: bytes, context: bytes) -> bytes:
    try:
        return AESGCM(key).decrypt(unb64(slot["nonce"]), unb64(slot["wrapped"]), context)
    except (InvalidTag, KeyError, ValueError) as err:
        raise WrongKeyError("the passphrase or key file does not open this folder") from err


def subkey(folder_key: bytes, label: str, length: int = KEY_BYTES) -> bytes:
    return HKDF(hashes.SHA256(), length, salt=None, info=b"hycloud-enc-1/" + label.encode()).derive(
        folder_key
    )


@dataclass(frozen=True)
class FolderKeys:
    """The keys an open folder uses, each for one purpose only."""

    folder_id: bytes
    names: bytes  # AES-SIV (512 bits): deterministic names
    chunks: bytes  # HKDF base of every chunk's own key
    manifests: bytes  # AES-GCM: chunk lists and name maps
    macs: bytes  # HMAC-SHA256: manifests and the header

    @classmethod
    def derive(cls, folder_id: bytes, folder_key: bytes) -> FolderKeys:
        return cls(
            folder_id,
            subkey(folder_key, "names", 64),
            subkey(folder_key, "chunks"),
            subkey(folder_key, "manifests"),
            subkey(folder_key, "macs"),
        )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(text: str) -> bytes:
    return base64.b64decode(text.encode(), validate=True)
