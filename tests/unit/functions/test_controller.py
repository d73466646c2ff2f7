"""Controller handler under moto: auth, small files, directories, path confinement."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import replace

import boto3
import pytest
from moto import mock_aws

from hycloud_core.store.records import Records
from hycloud_core.store.users import Users
from tests.conftest import api_event, load_function, make_stores

TABLE = "hycloud-test"


def ns(efs, table, user: str):
    """The user's namespace folder: named by its internal id, not its name."""
    return efs / "ns" / Users(table).profile(user)["id"]


@pytest.fixture
def cloud(tmp_path, monkeypatch, lambda_context):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("HYCLOUD_TABLE", TABLE)
    monkeypatch.setenv("HYCLOUD_EFS_ROOT", str(tmp_path / "efs"))
    monkeypatch.setenv("HYCLOUD_SMALL_FILE_THRESHOLD", "1024")
    with mock_aws():
        make_stores("hycloud-content", TABLE)
        ddb = boto3.resource("dynamodb")
        from hycloud.admin import create_user

        keys = {u: create_user(TABLE, u) for u in ("alice", "bob")}
        handler = load_function("controller")

        def call(user: str | None, method: str, path: str, **kw) -> tuple[int, dict | bytes, dict]:
            headers = kw.pop("headers", {})
            if user:
                headers["authorization"] = f"Bearer {keys[user]}"
            resp = handler.handler(api_event(method, path, headers=headers, **kw), lambda_context)
            body = resp["body"]
            headers = {k.lower(): v[-1] for k, v in resp.get("multiValueHeaders", {}).items()}
            if resp.get("isBase64Encoded"):
                return resp["statusCode"], base64.b64decode(body), headers
            return resp["statusCode"], json.loads(body) if body else {}, headers

        yield call, tmp_path / "efs", ddb.Table(TABLE)


def test_small_file_round_trip_lands_in_namespace_and_table(cloud):
    call, efs, table = cloud
    data = os.urandom(700)
    status, body, _ = call(
        "alice",
        "PUT",
        "/v1/files",
        query={"path": "/a.bin"},
        body=data,
        headers={"x-hycloud-sha256": hashlib.sha256(data).hexdigest()},
    )
    assert status == 201 and body["size"] == 700
    assert (ns(efs, table, "alice") / "a.bin").read_bytes() == data
    item = Records.over(table).get_file(Users(table).profile("alice")["id"], "/a.bin")
    assert item["sha256"] == hashlib.sha256(data).hexdigest() and item["kind"] == "small"
    status, got, headers = call("alice", "GET", "/v1/files", query={"path": "/a.bin"})
    assert status == 200 and got == data


def test_other_user_cannot_see_file(cloud):
    call, _, _ = cloud
    call("alice", "PUT", "/v1/files", query={"path": "/secret"}, body=b"x")
    status, body, _ = call("bob", "GET", "/v1/files", query={"path": "/secret"})
    assert status == 404 and body["error"]["code"] == "not-found"


@pytest.mark.parametrize(
    "headers,status,code",
    [
        ({}, 401, "missing-key"),
        ({"authorization": "Bearer nonsense"}, 401, "invalid-key"),
        ({"authorization": "Bearer hck_0123456789abcdef_" + "A" * 43}, 403, "invalid-key"),
    ],
)
def test_requests_without_valid_key_are_refused(cloud, headers, status, code):
    call, _, _ = cloud
    got_status, body, _ = call(None, "GET", "/v1/dirs", query={"path": "/"}, headers=headers)
    assert got_status == status and body["error"]["code"] == code


def test_wrong_secret_for_real_key_id_is_refused(cloud):
    call, _, _ = cloud
    status, body, _ = call(
        None,
        "GET",
        "/v1/dirs",
        query={"path": "/"},
        headers={"authorization": "Bearer hck_" + "0" * 16 + "_" + "B" * 43},
    )
    assert status == 403


@pytest.mark.parametrize(
    "path", ["/../bob/x", "/a/../../x", "a/%2e%2e/x", "/a\\..\\x", "/a/\x00b", "/./x", "/" + "n" * 256]
)
def test_hostile_paths_are_refused_and_nothing_written(cloud, path):
    call, efs, table = cloud
    status, body, _ = call("alice", "PUT", "/v1/files", query={"path": path}, body=b"evil")
    assert status == 400 and body["error"]["code"] == "invalid-path"
    bob = ns(efs, table, "bob")
    assert not bob.exists() or not any(bob.rglob("*"))
    written = [p for p in (efs / "ns").rglob("*") if p.is_file()] if (efs / "ns").exists() else []
    assert written == []


def test_symlink_escape_is_refused(cloud):
    call, efs, table = cloud
    call("alice", "POST", "/v1/dirs", body={"path": "/d"})
    bob = ns(efs, table, "bob")
    bob.mkdir(parents=True, exist_ok=True)
    (bob / "t").write_bytes(b"bob's")
    os.symlink(bob, ns(efs, table, "alice") / "link")
    status, body, _ = call("alice", "GET", "/v1/files", query={"path": "/link/t"})
    assert status == 400 and body["error"]["code"] == "invalid-path"


def test_truncated_body_is_refused_and_old_version_kept(cloud):
    call, efs, table = cloud
    call("alice", "PUT", "/v1/files", query={"path": "/f"}, body=b"version one")
    data = b"version two, complete"
    status, body, _ = call(
        "alice",
        "PUT",
        "/v1/files",
        query={"path": "/f"},
        body=data[:7],
        headers={"x-hycloud-sha256": hashlib.sha256(data).hexdigest()},
    )
    assert status == 400 and body["error"]["code"] == "hash-mismatch"
    assert (ns(efs, table, "alice") / "f").read_bytes() == b"version one"


def test_oversize_body_is_refused(cloud):
    call, efs, table = cloud
    status, body, _ = call("alice", "PUT", "/v1/files", query={"path": "/big"}, body=b"x" * 2000)
    assert status == 413 and body["error"]["code"] == "too-large-for-small-file"
    assert not (ns(efs, table, "alice") / "big").exists()


def test_mkdir_list_stat(cloud):
    call, _, _ = cloud
    assert call("alice", "POST", "/v1/dirs", body={"path": "/x/y"})[0] == 404
    status, body, _ = call("alice", "POST", "/v1/dirs", body={"path": "/x/y", "parents": True})
    assert status == 201 and body["type"] == "dir"
    call("alice", "PUT", "/v1/files", query={"path": "/x/f.txt"}, body=b"hello")
    status, body, _ = call("alice", "GET", "/v1/dirs", query={"path": "/x"})
    assert [(e["name"], e["type"], e["size"]) for e in body["entries"]] == [
        ("f.txt", "file", 5),
        ("y", "dir", 0),
    ]
    status, body, _ = call("alice", "GET", "/v1/stat", query={"path": "/x/f.txt"})
    assert status == 200 and body["size"] == 5
    status, body, _ = call("alice", "GET", "/v1/files", query={"path": "/x"})
    assert status == 409 and body["error"]["code"] == "is-a-directory"


def test_malformed_json_and_unknown_route(cloud):
    call, _, _ = cloud
    status, body, _ = call("alice", "POST", "/v1/dirs", body="{not json")
    assert status == 400 and body["error"]["code"] == "bad-body"
    status, body, _ = call("alice", "GET", "/v1/nothing-here")
    assert status == 404 and body["error"]["code"] == "no-such-route"


def test_a_download_of_a_version_still_settling_is_a_503_saying_when_to_ask_again(cloud, monkeypatch):
    from hycloud_core import content
    from hycloud_core.fs import FileSystem, Namespace
    from hycloud_core.store import objects as objects_mod
    from hycloud_core.store.objects import Objects

    call, efs, table = cloud
    who = Users(table).profile("alice")["id"]
    s3 = boto3.client("s3")
    records = Records(TABLE)
    fs = FileSystem(
        who,
        Namespace(str(efs / "ns"), who),
        records,
        Objects(records.table, s3, "hycloud-content"),
        s3,
        "hycloud-content",
    )
    data = b"x" * 4096
    fs.commit_stored("/big.bin", content.hash_bytes(data), len(data), settling=True)
    monkeypatch.setattr(objects_mod, "SETTLE_WAIT_S", 0.2)
    status, body, headers = call("alice", "GET", "/v1/files", query={"path": "/big.bin"})
    assert status == 503 and body["error"]["code"] == "settling" and headers["retry-after"] == "2"
    fs.objects.settled(content.hash_bytes(data))
    import context  # the controller's: its bucket, which this fixture leaves unset

    monkeypatch.setattr(context, "CONFIG", replace(context.CONFIG, bucket="hycloud-content"))
    status, body, _ = call("alice", "GET", "/v1/files", query={"path": "/big.bin"})
    assert status == 200 and content.object_key(content.hash_bytes(data)) in body["url"]
