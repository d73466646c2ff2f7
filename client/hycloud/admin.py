"""Administration straight against the deployment's DynamoDB table (needs AWS credentials, not an API key)."""

from __future__ import annotations

from typing import Any

from hycloud_core import auth
from hycloud_core.errors import BadRequestError
from hycloud_core.store.records import Records


def create_user(table: str, user: str, resource: Any | None = None) -> str:
    """Create a user and return its first API key; only the key's hash is stored."""
    if not auth.USER_NAME.match(user):
        raise BadRequestError("user names are 1-63 of a-z, 0-9 and '-', starting with a letter or digit")
    key = auth.new_key()
    Records(table, resource).create_user(user, key.key_id, key.secret_hash)
    return key.token
