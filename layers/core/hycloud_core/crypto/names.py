"""Deterministic name encryption: AES-SIV, then lowercase base32 without padding.

One plaintext name always gives one stored name (so a client finds a file by name without a
listing), nothing about the name shows but its rounded length, and a stored name that was
altered fails SIV's authentication. Names are padded to a multiple of 16 bytes before sealing,
and at most 128 bytes long (the sealed name then fits the 255-byte limit of a path element).
"""

from __future__ import annotations

import base64

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESSIV

from .errors import FormatError, IntegrityError
from .keys import FolderKeys

MAX_NAME_BYTES = 128
_AD = [b"hycloud-enc-1/name"]
_PAD = 16


def encrypt(fk: FolderKeys, name: str) -> str:
    raw = name.encode()
    if not raw or len(raw) > MAX_NAME_BYTES or "/" in name or name in (".", ".."):
        raise FormatError(f"cannot encrypt name {name!r}: 1 to {MAX_NAME_BYTES} bytes, no '/'")
    padded = raw + bytes(-len(raw) % _PAD)
    sealed = AESSIV(fk.names).encrypt(padded, _AD)
    return base64.b32encode(sealed).decode().rstrip("=").lower()


def decrypt(fk: FolderKeys, stored: str) -> str:
    try:
        text = stored.upper()
        sealed = base64.b32decode(text + "=" * (-len(text) % 8))
        return AESSIV(fk.names).decrypt(sealed, _AD).rstrip(b"\x00").decode()
    except (InvalidTag, ValueError) as err:
        raise IntegrityError(f"stored name {stored[:24]}… does not decrypt under this folder's key") from err
