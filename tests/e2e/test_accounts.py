"""Users and API keys on the deployed local cloud: revocation, rotation, disabling, deletion,
user ids that are never reused, and read-only keys; every step through the real `hycloud admin`
command and the REST API.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from hycloud.cli.exit_codes import QUOTA_EXCEEDED
from hycloud_core import auth, content
from tests.e2e.admin_cli import run_admin
from tests.e2e.conftest import Deployment, User
from tests.e2e.invariants import file_records

TIMEOUT_S = 60


def admin(deployment: Deployment, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """`hycloud --json admin ...` against the deployment's table, with the local cloud's credentials
    (the real CLI, run in this process: see tests/e2e/admin_cli.py)."""
    result = run_admin(deployment.env, deployment.outputs["TableName"], *args)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(args)} -> {result.returncode}\n{result.stdout}{result.stderr}")
    return result


def new_user(deployment: Deployment, *flags: str) -> User:
    name = f"acct-{uuid.uuid4().hex[:8]}"
    out = json.loads(admin(deployment, "create-user", name, *flags).stdout)
    return User(name, out["api_key"], deployment, out.get("id", name))


def call(deployment: Deployment, key: str, method: str, route: str, **kw) -> requests.Response:
    headers = {"authorization": f"Bearer {key}", **kw.pop("headers", {})}
    return requests.request(method, deployment.api_url + route, headers=headers, timeout=TIMEOUT_S, **kw)


def error_code(response: requests.Response) -> str | None:
    try:
        return response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None


def add_key(deployment: Deployment, user: User, *flags: str) -> str:
    """A new API key of `user` (`admin add-key`)."""
    return json.loads(admin(deployment, "add-key", user.name, *flags).stdout)["api_key"]


def whoami(deployment: Deployment, key: str) -> tuple[int, str | None]:
    response = call(deployment, key, "GET", "/v1/whoami")
    return response.status_code, response.json().get("user") if response.ok else error_code(response)


def put_small(deployment: Deployment, key: str, path: str, data: bytes) -> requests.Response:
    headers = {
        "Content-Type": "application/octet-stream",
        "x-hycloud-sha256": hashlib.sha256(data).hexdigest(),
    }
    return call(deployment, key, "PUT", "/v1/files", params={"path": path}, data=data, headers=headers)


def get_file(deployment: Deployment, key: str, path: str) -> requests.Response:
    headers = {"Accept": "application/octet-stream"}
    return call(deployment, key, "GET", "/v1/files", params={"path": path}, headers=headers)


def item(deployment: Deployment, pk: str, sk: str) -> dict | None:
    got = deployment.client("dynamodb").get_item(
        TableName=deployment.outputs["TableName"], Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True
    )
    return got.get("Item")


def key_id(token: str) -> str:
    return auth.parse_token(token)[0]


# --- revocation and rotation --------------------------------------------------------------------
def test_revoked_key_is_refused_at_once_and_other_keys_keep_working(deployment):
    user = new_user(deployment)
    second = add_key(deployment, user)
    listed = json.loads(admin(deployment, "list-keys", user.name).stdout)
    assert sorted(k["key_id"] for k in listed["keys"]) == sorted([key_id(user.key), key_id(second)])
    assert whoami(deployment, user.key) == (200, user.name)

    admin(deployment, "revoke-key", key_id(user.key))
    assert whoami(deployment, user.key) == (403, "invalid-key")
    assert whoami(deployment, second) == (200, user.name)
    assert item(deployment, f"KEY#{key_id(user.key)}", "KEY") is None
    listed = json.loads(admin(deployment, "list-keys", user.name).stdout)
    assert [k["key_id"] for k in listed["keys"]] == [key_id(second)]


def test_revoking_an_unknown_key_is_a_clear_error(deployment):
    result = admin(deployment, "revoke-key", "0123456789abcdef", check=False)
    assert result.returncode == 5 and "no key 0123456789abcdef" in result.stderr
    assert "Traceback" not in result.stderr


def test_rotation_replaces_the_key(deployment):
    user = new_user(deployment)
    new = json.loads(admin(deployment, "rotate-key", user.name).stdout)["api_key"]
    assert whoami(deployment, new) == (200, user.name)
    assert whoami(deployment, user.key) == (403, "invalid-key")


def test_rotation_with_grace_keeps_the_old_key_until_it_expires(deployment):
    """10 s of grace: twice what the checks below take on a loaded machine (two requests and one
    `hycloud admin`; with the admin command started as a process they once took over 10 s), and
    the test waits it out."""
    user = new_user(deployment)
    new = json.loads(admin(deployment, "rotate-key", user.name, "--grace", "10").stdout)["api_key"]
    assert whoami(deployment, user.key) == (200, user.name)
    assert whoami(deployment, new) == (200, user.name)
    keys = json.loads(admin(deployment, "list-keys", user.name).stdout)["keys"]
    expires = next(k["expires"] for k in keys if k["key_id"] == key_id(user.key))
    assert expires is not None and time.time() < expires <= time.time() + 10
    time.sleep(max(0.0, expires - time.time()) + 1.5)
    assert whoami(deployment, user.key) == (403, "invalid-key")
    assert whoami(deployment, new) == (200, user.name)


# --- disabling and deleting ----------------------------------------------------------------------
def with_two_keys_after(deployment: Deployment, command: str) -> tuple[User, tuple[str, str]]:
    """A new user given a second key, then `admin COMMAND USER`: the user and both its keys."""
    user = new_user(deployment)
    second = add_key(deployment, user)
    admin(deployment, command, user.name)
    return user, (user.key, second)


def test_disabled_user_is_refused_with_every_key_until_enabled(deployment):
    user, keys = with_two_keys_after(deployment, "disable-user")
    for key in keys:
        assert whoami(deployment, key) == (403, "user-disabled")
        assert put_small(deployment, key, "/x", b"x").status_code == 403
    admin(deployment, "enable-user", user.name)
    assert whoami(deployment, user.key) == (200, user.name)
    assert put_small(deployment, keys[1], "/x", b"x").status_code == 201


def test_removing_the_profile_record_revokes_its_keys(deployment):
    """Deleting the user's record alone (as an operator might) must not leave its key working."""
    user = new_user(deployment)
    deployment.client("dynamodb").delete_item(
        TableName=deployment.outputs["TableName"],
        Key={"pk": {"S": f"USER#{user.name}"}, "sk": {"S": "PROFILE"}},
    )
    assert whoami(deployment, user.key) == (403, "invalid-key")


def test_delete_user_refuses_while_the_namespace_has_files(deployment):
    user = new_user(deployment)
    assert put_small(deployment, user.key, "/keep.txt", b"keep").status_code == 201
    result = admin(deployment, "delete-user", user.name, check=False)
    assert result.returncode == 6 and "user-has-files" in result.stderr and "Traceback" not in result.stderr
    assert whoami(deployment, user.key) == (200, user.name)
    assert item(deployment, f"USER#{user.name}", "PROFILE") is not None
    got = get_file(deployment, user.key, "/keep.txt")
    assert got.status_code == 200 and got.content == b"keep"


def test_deleted_user_leaves_a_tombstone_and_no_keys(deployment):
    user, keys = with_two_keys_after(deployment, "delete-user")
    for key in keys:
        assert whoami(deployment, key) == (403, "invalid-key")
        assert item(deployment, f"KEY#{key_id(key)}", "KEY") is None
    assert item(deployment, f"USER#{user.name}", "PROFILE") is None
    tombstone = item(deployment, f"USERID#{user.id}", "ID")
    assert tombstone and tombstone["state"]["S"] == "deleted" and tombstone["name"]["S"] == user.name


def test_unknown_user_commands_are_clear_errors(deployment):
    for args in (
        ["disable-user", "nobody-here"],
        ["delete-user", "nobody-here"],
        ["list-keys", "nobody-here"],
    ):
        result = admin(deployment, *args, check=False)
        assert result.returncode == 5 and "nobody-here" in result.stderr and "Traceback" not in result.stderr
    result = admin(deployment, "create-user", "Bad_Name", check=False)
    assert result.returncode == 2 and "user names" in result.stderr


# --- user ids ------------------------------------------------------------------------------------
def test_recreated_user_gets_a_new_id_and_an_empty_namespace(deployment):
    old = new_user(deployment)
    assert call(deployment, old.key, "POST", "/v1/dirs", json={"path": "/private"}).status_code == 201
    assert old.id.startswith("u-") and (deployment.efs_root() / "ns" / old.id / "private").is_dir()
    admin(deployment, "delete-user", old.name)

    out = json.loads(admin(deployment, "create-user", old.name).stdout)
    assert out.get("id") != old.id and out["user"] == old.name
    assert whoami(deployment, out["api_key"]) == (200, old.name)
    listing = call(deployment, out["api_key"], "GET", "/v1/dirs", params={"path": "/"})
    assert listing.status_code == 200 and listing.json()["entries"] == []
    assert whoami(deployment, old.key) == (403, "invalid-key")


def test_recreated_user_after_a_removed_profile_sees_none_of_the_old_files(deployment):
    old = new_user(deployment)
    assert put_small(deployment, old.key, "/secret.txt", b"old secret").status_code == 201
    deployment.client("dynamodb").delete_item(
        TableName=deployment.outputs["TableName"],
        Key={"pk": {"S": f"USER#{old.name}"}, "sk": {"S": "PROFILE"}},
    )
    out = json.loads(admin(deployment, "create-user", old.name).stdout)
    got = get_file(deployment, out["api_key"], "/secret.txt")
    assert got.status_code == 404 and b"old secret" not in got.content
    assert whoami(deployment, old.key) == (403, "invalid-key")
    assert item(deployment, f"NS#{old.id}", "F#root/secret.txt") is not None  # the old data is untouched


def test_user_made_before_ids_keeps_its_name_as_id(deployment):
    """A profile and key written in the earlier format (no id) still work, keyed by the name."""
    name, key = f"legacy-{uuid.uuid4().hex[:8]}", auth.new_key()
    ddb, table = deployment.client("dynamodb"), deployment.outputs["TableName"]
    ddb.put_item(
        TableName=table, Item={"pk": {"S": f"USER#{name}"}, "sk": {"S": "PROFILE"}, "created": {"N": "1"}}
    )
    ddb.put_item(
        TableName=table,
        Item={
            "pk": {"S": f"KEY#{key.key_id}"},
            "sk": {"S": "KEY"},
            "user": {"S": name},
            "secret_hash": {"S": key.secret_hash},
            "created": {"N": "1"},
        },
    )
    assert whoami(deployment, key.token) == (200, name)
    assert put_small(deployment, key.token, "/old.txt", b"legacy").status_code == 201
    assert item(deployment, f"NS#{name}", "F#root/old.txt") is not None
    assert (deployment.efs_root() / "ns" / name / "old.txt").read_bytes() == b"legacy"


# --- read-only keys ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def reader(deployment) -> tuple[User, str]:
    """A user with one file, and a read-only key of theirs."""
    user = new_user(deployment)
    assert put_small(deployment, user.key, "/doc.txt", b"read me").status_code == 201
    token = add_key(deployment, user, "--read-only")
    return user, token


def test_read_only_key_reads(deployment, reader):
    _, token = reader
    got = get_file(deployment, token, "/doc.txt")
    assert got.status_code == 200 and got.content == b"read me"
    listing = call(deployment, token, "GET", "/v1/dirs", params={"path": "/"})
    assert [e["name"] for e in listing.json()["entries"]] == ["doc.txt"]


@pytest.mark.parametrize(
    "method,route,kw",
    [
        ("PUT", "/v1/files", {"params": {"path": "/doc.txt"}, "data": b"overwritten"}),
        ("DELETE", "/v1/files", {"params": {"path": "/doc.txt"}}),
        ("POST", "/v1/dirs", {"json": {"path": "/new"}}),
        ("POST", "/v1/move", {"json": {"src": "/doc.txt", "dst": "/moved.txt"}}),
        ("POST", "/v1/copy", {"json": {"src": "/doc.txt", "dst": "/copy.txt"}}),
        ("POST", "/v1/uploads", {"json": {"path": "/big", "size": 1, "content_hash": "0" * 64}}),
    ],
)
def test_read_only_key_cannot_change_anything(deployment, reader, method, route, kw):
    user, token = reader
    response = call(deployment, token, method, route, **kw)
    assert response.status_code == 403 and error_code(response) == "read-only-key"
    listing = call(deployment, user.key, "GET", "/v1/dirs", params={"path": "/"})
    assert [e["name"] for e in listing.json()["entries"]] == ["doc.txt"]
    got = get_file(deployment, user.key, "/doc.txt")
    assert got.content == b"read me"


def test_read_only_user_from_create_user(deployment):
    user = new_user(deployment, "--read-only")
    assert whoami(deployment, user.key) == (200, user.name)
    response = put_small(deployment, user.key, "/x", b"x")
    assert response.status_code == 403 and error_code(response) == "read-only-key"
    listed = json.loads(admin(deployment, "list-keys", user.name).stdout)["keys"]
    assert [k["read_only"] for k in listed] == [True]


@pytest.mark.parametrize("method,route", [("POST", "/v1/relay"), ("POST", "/v1/delta/download")])
def test_read_only_key_may_start_jobs_that_only_read(deployment, reader, method, route):
    """Relay and delta-download requests pass the read-only check (here refused only for the small file)."""
    _, token = reader
    response = call(deployment, token, method, route, json={"path": "/doc.txt", "base_hash": "0" * 64})
    assert response.status_code == 409 and error_code(response) == "not-a-large-file"


# --- quotas --------------------------------------------------------------------------------------
def counter(deployment: Deployment, user: User) -> tuple[int, int]:
    got = item(deployment, f"USAGE#{user.id}", "USAGE") or {}
    return int(got.get("bytes", {"N": 0})["N"]), int(got.get("files", {"N": 0})["N"])


def recorded(deployment: Deployment, user: User) -> tuple[int, int]:
    """Bytes and files as the namespace's file records say."""
    sizes = [int(r["size"]) for r in file_records(deployment, user.id).values()]
    return sum(sizes), len(sizes)


def test_byte_quota_refuses_a_write_and_changes_nothing(deployment):
    user = new_user(deployment)
    admin(deployment, "set-quota", user.name, "--bytes", "1000", "--files", "10")
    assert put_small(deployment, user.key, "/a", b"a" * 600).status_code == 201
    refused = put_small(deployment, user.key, "/b", b"b" * 600)
    assert refused.status_code == 403 and error_code(refused) == "quota-exceeded"
    message = refused.json()["error"]["message"]
    assert "1000" in message and "600" in message
    assert not (deployment.efs_root() / "ns" / user.id / "b").exists()
    assert item(deployment, f"NS#{user.id}", "F#root/b") is None and counter(deployment, user) == (600, 1)
    assert put_small(deployment, user.key, "/a", b"a" * 900).status_code == 201  # +300 fits
    report = json.loads(user.cli("--json", "usage").stdout)
    assert report["quota"] == {"bytes": {"used": 900, "limit": 1000}, "files": {"used": 1, "limit": 10}}
    assert "quota" in user.cli("usage").stdout


def test_file_quota_counts_copies_and_frees_on_delete(deployment):
    user = new_user(deployment)
    admin(deployment, "set-quota", user.name, "--files", "2")
    for name in ("/1", "/2"):
        assert put_small(deployment, user.key, name, b"x").status_code == 201
    assert error_code(put_small(deployment, user.key, "/3", b"x")) == "quota-exceeded"
    copied = call(deployment, user.key, "POST", "/v1/copy", json={"src": "/1", "dst": "/4"})
    assert copied.status_code == 403 and error_code(copied) == "quota-exceeded"
    assert get_file(deployment, user.key, "/4").status_code == 404
    assert call(deployment, user.key, "DELETE", "/v1/files", params={"path": "/1"}).status_code == 200
    assert put_small(deployment, user.key, "/3", b"x").status_code == 201
    assert counter(deployment, user) == recorded(deployment, user) == (2, 2)


def test_concurrent_writes_never_pass_the_limit_together(deployment):
    user = new_user(deployment)
    admin(deployment, "set-quota", user.name, "--files", "5")
    with ThreadPoolExecutor(max_workers=8) as pool:
        responses = list(pool.map(lambda i: put_small(deployment, user.key, f"/f{i}", b"x"), range(16)))
    statuses = [(r.status_code, error_code(r)) for r in responses]
    assert all(s in ((201, None), (403, "quota-exceeded"), (409, "quota-busy")) for s in statuses), statuses
    accepted = statuses.count((201, None))
    on_efs = len(list((deployment.efs_root() / "ns" / user.id).iterdir()))
    assert 1 <= accepted <= 5 and counter(deployment, user) == recorded(deployment, user) == (
        accepted,
        accepted,
    )
    assert on_efs == accepted


def test_large_upload_over_quota_is_refused_at_commit_and_resumes_when_raised(deployment, tmp_path):
    user = new_user(deployment)
    admin(deployment, "set-quota", user.name, "--bytes", str(1024 * 1024))
    data = os.urandom(3 * 1024 * 1024)
    (tmp_path / "big").write_bytes(data)
    result = user.cli("put", str(tmp_path / "big"), "/big", check=False)
    assert result.returncode == QUOTA_EXCEEDED and "quota-exceeded" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (deployment.efs_root() / "ns" / user.id / "big").exists()
    assert counter(deployment, user) == (0, 0)
    admin(deployment, "set-quota", user.name, "--bytes", "-1")  # unlimited
    user.cli("put", str(tmp_path / "big"), "/big")
    user.sdk().get("/big", str(tmp_path / "back"))  # the read back is a check, not what is tested
    assert hashlib.sha256((tmp_path / "back").read_bytes()).digest() == hashlib.sha256(data).digest()
    assert counter(deployment, user) == (len(data), 1)


def test_counter_follows_tree_operations_and_recount_repairs_it(deployment):
    user = new_user(deployment)
    assert call(deployment, user.key, "POST", "/v1/dirs", json={"path": "/d"}).status_code == 201
    for i in range(3):
        assert put_small(deployment, user.key, f"/d/f{i}", b"y" * (10 + i)).status_code == 201
    assert call(deployment, user.key, "POST", "/v1/copy", json={"src": "/d", "dst": "/e"}).status_code == 201
    assert (
        call(deployment, user.key, "POST", "/v1/move", json={"src": "/e/f0", "dst": "/d/f1"}).status_code
        == 200
    )
    assert counter(deployment, user) == recorded(deployment, user) == (10 + 11 + 12 + 11 + 12 + 10 - 11, 5)
    removed = call(deployment, user.key, "DELETE", "/v1/dirs", params={"path": "/e", "recursive": "true"})
    assert removed.status_code == 200
    assert counter(deployment, user) == recorded(deployment, user) == (10 + 10 + 12, 3)

    deployment.client("dynamodb").update_item(
        TableName=deployment.outputs["TableName"],
        Key={"pk": {"S": f"USAGE#{user.id}"}, "sk": {"S": "USAGE"}},
        UpdateExpression="SET #b = :b",
        ExpressionAttributeNames={"#b": "bytes"},
        ExpressionAttributeValues={":b": {"N": "123456"}},
    )
    fixed = json.loads(admin(deployment, "recount-usage", user.name).stdout)
    assert (fixed["bytes"], fixed["files"]) == (32, 3) and counter(deployment, user) == (32, 3)


def test_set_quota_rejects_bad_values(deployment):
    user = new_user(deployment)
    result = admin(deployment, "set-quota", user.name, "--bytes", "-5", check=False)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    result = admin(deployment, "set-quota", "nobody-here", "--bytes", "5", check=False)
    assert result.returncode == 5


def test_commit_with_a_malformed_hash_is_a_bad_request(deployment):
    """The quota looks up the pending upload before the commit: a malformed hash must not reach the
    table. One user for the three hashes: a refused commit changes nothing of theirs."""
    user = new_user(deployment)
    for content_hash in ["", "not-a-hash", "0" * 63]:
        response = call(
            deployment,
            user.key,
            "POST",
            "/v1/uploads/commit",
            json={"content_hash": content_hash, "path": "/x"},
        )
        assert response.status_code == 400 and counter(deployment, user) == (0, 0), (
            content_hash,
            response.text,
        )


def partition(deployment: Deployment, pk: str) -> list[dict]:
    got = deployment.client("dynamodb").query(
        TableName=deployment.outputs["TableName"],
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": pk}},
        ConsistentRead=True,
    )
    return got["Items"]


@pytest.mark.exclusive
def test_upkeep_clears_what_a_deleted_user_left_behind(deployment):
    user = new_user(deployment)
    assert (
        call(
            deployment, user.key, "POST", "/v1/dirs", json={"path": "/empty/deeper", "parents": True}
        ).status_code
        == 201
    )
    assert put_small(deployment, user.key, "/gone.txt", b"soon gone").status_code == 201
    assert call(deployment, user.key, "DELETE", "/v1/files", params={"path": "/gone.txt"}).status_code == 200
    data = os.urandom(9 * 1024 * 1024)
    parts = [data[: 8 * 1024 * 1024], data[8 * 1024 * 1024 :]]
    plan = call(
        deployment,
        user.key,
        "POST",
        "/v1/uploads",
        json={
            "size": len(data),
            "content_hash": content.hash_bytes(data),
            "part_digests": [content.b64(hashlib.sha256(p).digest()) for p in parts],
        },
    )
    assert plan.status_code == 200, plan.text
    pending = partition(deployment, f"UPLOAD#{user.id}")
    assert len(pending) == 1 and user.ns_dir().is_dir()
    upload_id = pending[0]["upload_id"]["S"]

    admin(deployment, "delete-user", user.name)
    deployment.upkeep()  # within the grace period an in-flight request may still write: kept
    assert user.ns_dir().is_dir() and len(partition(deployment, f"UPLOAD#{user.id}")) == 1
    assert user.id in deployment.upkeep(grace_s=0)["users_purged"]

    assert not user.ns_dir().exists()
    for prefix in ("NS", "UPLOAD", "LOCK", "JOB", "USAGE"):
        assert partition(deployment, f"{prefix}#{user.id}") == [], prefix
    uploads = deployment.client("s3").list_multipart_uploads(Bucket=deployment.outputs["BucketName"])
    assert upload_id not in [u["UploadId"] for u in uploads.get("Uploads", [])]
    assert item(deployment, f"USERID#{user.id}", "ID")["state"]["S"] == "deleted"
