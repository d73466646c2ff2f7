"""User and key records under moto: identification, revocation, rotation, deletion, read-only access."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from hycloud_core import auth
from hycloud_core.errors import ConflictError, ForbiddenError, NotFoundError
from hycloud_core.store.records import Records
from hycloud_core.store.users import Users
from tests.conftest import make_stores

TABLE = "users-test"


@pytest.fixture
def users(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        make_stores("unused-bucket", TABLE)
        yield Users(boto3.resource("dynamodb").Table(TABLE))


def refused(users: Users, token: str, now: float | None = None) -> str:
    with pytest.raises(ForbiddenError) as err:
        users.identify(token, now)
    return err.value.code


def test_identity_carries_name_and_a_fresh_id(users):
    key = auth.new_key()
    uid = users.create("alice", key)
    who = users.identify(f"Bearer {key.token}")
    assert who == auth.Identity("alice", uid, key.key_id, False) and uid.startswith("u-") and len(uid) == 34
    with pytest.raises(ConflictError):
        users.create("alice", auth.new_key())


def test_profile_gone_or_replaced_refuses_old_keys(users):
    key = auth.new_key()
    users.create("alice", key)
    users.table.delete_item(Key={"pk": "USER#alice", "sk": "PROFILE"})
    assert refused(users, key.token) == "invalid-key"
    fresh = auth.new_key()
    users.create("alice", fresh)  # same name, new id: the old key still does not fit
    assert refused(users, key.token) == "invalid-key"
    assert users.identify(fresh.token).name == "alice"


def test_revoke_disable_and_expiry(users):
    first, second = auth.new_key(), auth.new_key()
    users.create("bob", first)
    users.add_key("bob", second, read_only=True)
    assert users.revoke(first.key_id) == "bob"
    assert refused(users, first.token) == "invalid-key"
    with pytest.raises(NotFoundError):
        users.revoke(first.key_id)
    users.set_disabled("bob", True)
    assert refused(users, second.token) == "user-disabled"
    users.set_disabled("bob", False)
    assert users.identify(second.token).read_only


def test_rotation_with_grace_expires_the_old_key_later(users):
    old, new = auth.new_key(), auth.new_key()
    users.create("carol", old)
    assert users.rotate("carol", new, grace_s=60) == [old.key_id]
    expires = next(k["expires"] for k in users.keys("carol") if k["key_id"] == old.key_id)
    assert users.identify(old.token, now=expires - 1).user_id == users.identify(new.token).user_id
    assert refused(users, old.token, now=expires) == "invalid-key"


def test_delete_refuses_with_files_then_leaves_a_tombstone(users):
    key = auth.new_key()
    uid = users.create("dave", key)
    Records.over(users.table).put_file(uid, "/d/a", kind="small", size=1)
    with pytest.raises(ConflictError) as err:
        users.delete("dave")
    assert err.value.code == "user-has-files" and "1 files" in err.value.message
    assert users.identify(key.token).name == "dave"  # refused deletion leaves the user enabled
    Records.over(users.table).delete_file(uid, "/d/a")
    assert users.delete("dave") == uid
    assert (
        users.profile("dave") is None
        and users.table.get_item(Key={"pk": f"KEY#{key.key_id}", "sk": "KEY"}).get("Item") is None
    )
    tomb = users.table.get_item(Key={"pk": f"USERID#{uid}", "sk": "ID"})["Item"]
    assert tomb["state"] == "deleted" and tomb["name"] == "dave"
    assert users.create("dave", auth.new_key()) != uid


def test_legacy_records_use_the_name_as_id(users):
    key = auth.new_key()
    users.table.put_item(Item={"pk": "USER#old", "sk": "PROFILE", "created": 1})
    users.table.put_item(
        Item={"pk": f"KEY#{key.key_id}", "sk": "KEY", "user": "old", "secret_hash": key.secret_hash}
    )
    assert users.identify(key.token) == auth.Identity("old", "old", key.key_id, False)


@pytest.mark.parametrize(
    "method,route,allowed",
    [
        ("GET", "/v1/files", True),
        ("PUT", "/v1/files", False),
        ("DELETE", "/v1/dirs", False),
        ("POST", "/v1/copy", False),
        ("POST", "/v1/files/chunking", False),
        ("POST", "/v1/relay", True),
        ("post", "/v1/delta/download", True),
        ("PUT", "/v1/delta/download", True),
        ("PUT", "/v1/delta/upload", False),
    ],
)
def test_read_only_keys_may_only_read(method, route, allowed):
    reader = auth.Identity("r", "u-1", "k", read_only=True)
    auth.check_access(auth.Identity("w", "u-2", "k"), method, route)  # a full key may do anything
    if allowed:
        auth.check_access(reader, method, route)
    else:
        with pytest.raises(ForbiddenError) as err:
            auth.check_access(reader, method, route)
        assert err.value.code == "read-only-key"
