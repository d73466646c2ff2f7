"""GET /v1/versions and POST /v1/restore through the controller under moto: answers, statuses, bytes."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from hycloud_core import content
from tests.conftest import api_event, load_function
from tests.unit.functions.conftest import TABLE


@pytest.fixture
def call(stores, lambda_context):
    from hycloud.admin import create_user

    key = create_user(TABLE, "alice")
    handler = load_function("controller")

    def call(method: str, path: str, **kw) -> tuple[int, dict | bytes]:
        headers = {"authorization": f"Bearer {key}", **kw.pop("headers", {})}
        resp = handler.handler(api_event(method, path, headers=headers, **kw), lambda_context)
        if resp.get("isBase64Encoded"):
            return resp["statusCode"], base64.b64decode(resp["body"])
        return resp["statusCode"], json.loads(resp["body"]) if resp["body"] else {}

    return call


def put(call, path: str, data: bytes) -> None:
    headers = {
        "x-hycloud-sha256": hashlib.sha256(data).hexdigest(),
        "content-type": "application/octet-stream",
    }
    assert call("PUT", "/v1/files", query={"path": path}, body=data, headers=headers)[0] == 201


def read(call, path: str) -> bytes:
    status, body = call("GET", "/v1/files", query={"path": path})
    assert status == 200
    return body  # type: ignore[return-value]


def test_versions_are_listed_newest_first_and_restored(call):
    put(call, "/doc.txt", b"one")
    put(call, "/doc.txt", b"two")
    put(call, "/doc.txt", b"three")
    status, listing = call("GET", "/v1/versions", query={"path": "/doc.txt"})
    assert status == 200 and listing["path"] == "/doc.txt"
    assert listing["current"]["content_hash"] == content.hash_bytes(b"three")
    hashes = [v["content_hash"] for v in listing["versions"]]
    assert hashes == [content.hash_bytes(b"two"), content.hash_bytes(b"one")]
    oldest = listing["versions"][1]
    assert oldest["reason"] == "overwrite" and oldest["size"] == 3 and oldest["by"]

    status, done = call("POST", "/v1/restore", body={"path": "/doc.txt", "version": oldest["version"]})
    assert status == 201 and done["restored"]["version"] == oldest["version"]
    assert done["entry"]["sha256"] == hashlib.sha256(b"one").hexdigest() and read(call, "/doc.txt") == b"one"

    status, done = call("POST", "/v1/restore", body={"path": "/doc.txt", "to": "/copy.txt"})
    assert status == 201 and done["entry"]["path"] == "/copy.txt" and read(call, "/copy.txt") == b"three"


def test_a_deleted_file_comes_back(call):
    put(call, "/gone.bin", b"\x00\x01bytes")
    assert call("DELETE", "/v1/files", query={"path": "/gone.bin"})[0] == 200
    status, listing = call("GET", "/v1/versions", query={"path": "/gone.bin"})
    assert status == 200 and listing["current"] is None and listing["versions"][0]["reason"] == "delete"
    assert call("POST", "/v1/restore", body={"path": "/gone.bin"})[0] == 201
    assert read(call, "/gone.bin") == b"\x00\x01bytes"


REFUSALS = [  # (method, route, request, status, code)
    ("GET", "/v1/versions", {"query": {"path": "/nothing"}}, 404, "not-found"),
    ("GET", "/v1/versions", {"query": {"path": "/a/../b"}}, 400, "invalid-path"),
    ("GET", "/v1/versions", {}, 400, None),
    (
        "POST",
        "/v1/restore",
        {"body": {"path": "/f", "version": "0000000000000-00000000"}},
        404,
        "version-not-found",
    ),
    ("POST", "/v1/restore", {"body": {"path": "/nothing"}}, 404, "version-not-found"),
    ("POST", "/v1/restore", {"body": {"path": "/f", "version": "latest"}}, 400, "bad-version-id"),
    ("POST", "/v1/restore", {"body": {"path": "/f", "to": ""}}, 400, None),
    ("POST", "/v1/restore", {"body": {"version": "0000000000000-00000000"}}, 400, None),
]


def test_clear_refusals_change_nothing(call):
    put(call, "/f", b"1")
    put(call, "/f", b"2")
    for method, route, kw, status, code in REFUSALS:
        got, body = call(method, route, **kw)
        assert got == status, (route, kw, body)
        if code:
            assert body["error"]["code"] == code, (route, kw, body)  # type: ignore[index]
    assert read(call, "/f") == b"2"
    assert len(call("GET", "/v1/versions", query={"path": "/f"})[1]["versions"]) == 1  # type: ignore[index]


def test_upkeep_drops_versions_an_operator_shortens_and_the_collector_their_content(stores, lambda_context):
    """The upkeep function's wiring: versions purged before the mark, so the same round reclaims."""
    import boto3

    from hycloud_core.config import InstanceConfig
    from hycloud_core.fs import FileSystem
    from hycloud_core.store.records import Records
    from tests.unit.functions.conftest import BUCKET

    config = InstanceConfig()
    fs = FileSystem.deployed(config, "u-1", boto3.client("s3"), Records(TABLE))
    data = b"L" * 5000
    h = content.hash_bytes(data)
    fs.s3.put_object(Bucket=BUCKET, Key=content.object_key(h), Body=data)
    fs.commit_stored("/big", h, len(data))
    fs.delete("/big")
    upkeep = load_function("maintenance")
    kept = upkeep.handler({"grace_s": 0}, lambda_context)
    assert kept["versions_purged"]["records"] == 0 and h not in kept["collected"]["reclaimed"]
    dropped = upkeep.handler({"grace_s": 0, "version_retention_s": 0}, lambda_context)
    assert dropped["versions_purged"]["records"] == 1 and dropped["collected"]["reclaimed"] == []
    purged = upkeep.handler({"grace_s": 0, "trash_retention_s": 0}, lambda_context)  # its link: in the trash
    assert purged["trash_purged"]["items"] == 1 and purged["collected"]["reclaimed"] == [h]
