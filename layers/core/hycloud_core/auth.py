"""API keys: format, generation and verification; who a request acts as and what it may do.

A key is `hck_<key id>_<secret>`. Only sha256(secret) is stored, under the key id, so a leaked
table does not leak keys and the lookup needs no scan. The secret has 256 bits of entropy,
which makes a fast hash safe here (no password stretching needed).

A user has a name (what people type) and an internal id (`u-<uuid hex>`) that keys its
namespace and records. Ids are never reused, so a new user of an old name starts empty.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import uuid
from dataclasses import dataclass

from .errors import ForbiddenError, UnauthorizedError

_KEY = re.compile(r"^hck_([A-Za-z0-9]{16})_([A-Za-z0-9_-]{43})$")
USER_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Requests that only read, though their method is not GET: they start jobs that fetch or encode a
# file the caller can read (relay to EFS, delta download) and change nothing the caller owns.
# POST /v1/files/chunking is a write (it updates the file's link file); the client ignores its refusal.
READ_LIKE = frozenset(
    {
        ("POST", "/v1/relay"),
        ("POST", "/v1/delta/download"),
        ("PUT", "/v1/delta/download"),
        ("POST", "/v1/merkle/children"),
        ("POST", "/v1/merkle/diff"),  # answers what differs, changes nothing
        ("POST", "/v1/bundles/download"),  # answers files the caller can read
    }
)


@dataclass(frozen=True)
class NewKey:
    key_id: str
    secret_hash: str
    token: str


@dataclass(frozen=True)
class Identity:
    """Who an accepted key acts as: `user_id` keys storage, `name` is shown."""

    name: str
    user_id: str
    key_id: str
    read_only: bool = False


def new_user_id() -> str:
    return f"u-{uuid.uuid4().hex}"


def check_access(identity: Identity, method: str, route: str) -> None:
    """Refuse a read-only key anything that may change the caller's files."""
    method = method.upper()
    if identity.read_only and method in WRITE_METHODS and (method, route.rstrip("/")) not in READ_LIKE:
        raise ForbiddenError(f"this key is read-only; {method} {route} changes files", code="read-only-key")


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
