"""API key format and verification."""

import pytest

from hycloud_core import auth
from hycloud_core.errors import UnauthorizedError


def test_new_key_verifies_and_only_hash_is_kept():
    key = auth.new_key()
    key_id, secret = auth.parse_token(f"Bearer {key.token}")
    assert key_id == key.key_id and secret not in key.secret_hash
    assert auth.secret_matches(secret, key.secret_hash)
    assert not auth.secret_matches(secret[:-1] + ("A" if secret[-1] != "A" else "B"), key.secret_hash)


@pytest.mark.parametrize("token", [None, "", "Bearer", "hck_short_x", "hck_" + "g" * 16 + "_" + "a" * 42])
def test_malformed_tokens(token):
    with pytest.raises(UnauthorizedError):
        auth.parse_token(token)
