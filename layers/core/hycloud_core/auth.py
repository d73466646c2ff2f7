"""API keys: format, generation and verification.

A key is `hck_<key id>_<secret>`. Only sha256(secret) is stored, under the key id, so a leaked
table does not leak keys and the lookup needs no scan. The secret has 256 bits of entropy,
which makes a fast hash safe here (no password stretching needed).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from .errors import UnauthorizedError

_KEY = re.compile(r"^hck_([A-Za-z0-9]{16})_([A-Za-z0-9_-]{43})$")
USER_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


@dataclass(frozen=True)
class NewKey:
    key_id: str
    secret_hash: str
    token: str


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_key() -> NewKey:
    key_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    return NewKey(key_id=key_id, secret_hash=hash_secret(secret), token=f"hck_{key_id}_{secret}")


def parse_token(token: str | None) -> tuple[str, str]:
    """Split a presented key into (key id, secret); raise UnauthorizedError if malformed or absent."""
    if not token:
        raise UnauthorizedError("missing API key", code="missing-key")
    if token.lower().startswith("bearer "):
        token = token[7:].strip()
    match = _KEY.match(token)
    if not match:
        raise UnauthorizedError("malformed API key", code="invalid-key")
    return match.group(1), match.group(2)


def secret_matches(secret: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_secret(secret), stored_hash)
