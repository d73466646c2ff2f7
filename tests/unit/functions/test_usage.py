"""GET /v1/usage under moto: the caller's namespace measured, shared content split, three layouts priced."""

from __future__ import annotations

import base64
import hashlib
import importlib
import json

import pytest
from moto import mock_aws

from hycloud_core.cost import load_prices
from hycloud_core.fs import FileSystem, Namespace, segments
from hycloud_core.store.objects import Objects
from hycloud_core.store.records import Records
from hycloud_core.store.users import Users
from tests.conftest import api_event, load_function, make_stores
from tests.unit.large_upload import upload_large

TABLE, BUCKET = "hycloud-test", "hycloud-content"
BIG = b"large-file-content" * 200  # 3600 bytes; stored as a large file whatever its size


def controller_with_usage_route():
    """The controller as deployed, plus the usage router if handler.py does not include it yet."""
    handler = load_function("controller")
    if not hasattr(handler, "usage"):  # handler.py imports the route modules it includes
        handler.app.include_router(importlib.import_module("routes.usage").router)
    return handler


@pytest.fixture
def cloud(tmp_path, monkeypatch, lambda_context):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("HYCLOUD_TABLE", TABLE)
    monkeypatch.setenv("HYCLOUD_BUCKET", BUCKET)
    monkeypatch.setenv("HYCLOUD_EFS_ROOT", str(tmp_path / "efs"))
    with mock_aws():
        s3 = make_stores(BUCKET, TABLE)
        from hycloud.admin import create_user

        keys = {u: create_user(TABLE, u) for u in ("alice", "bob")}
        handler = controller_with_usage_route()
        records = Records(TABLE)
        objects = Objects(records.table, s3, BUCKET)

        def fs(user: str) -> FileSystem:
            uid = Users(records.table).profile(user)["id"]  # storage is keyed by the internal id
            ns = Namespace(str(tmp_path / "efs" / "ns"), uid)
            return FileSystem(uid, ns, records, objects, s3, BUCKET)

        def call(user: str | None, method: str, path: str, **kw) -> tuple[int, dict]:
            headers = {"authorization": f"Bearer {keys[user]}"} if user else {}
            resp = handler.handler(api_event(method, path, headers=headers, **kw), lambda_context)
            body = base64.b64decode(resp["body"]) if resp.get("isBase64Encoded") else resp["body"]
            return resp["statusCode"], json.loads(body) if body else {}

        yield call, fs, s3


def test_usage_reports_efs_s3_dedup_and_shared_content(cloud):
    call, fs, s3 = cloud
    assert call("alice", "PUT", "/v1/files", query={"path": "/notes.txt"}, body=b"n" * 700)[0] == 201
    assert call("alice", "POST", "/v1/dirs", body={"path": "/d"})[0] == 201
    alice = fs("alice")
    upload_large(alice, s3, BUCKET, BIG, "/d/big.bin")
    alice.copy("/d/big.bin", "/d/copy.bin")
    upload_large(fs("bob"), s3, BUCKET, BIG, "/mine.bin")  # same content: deduplicated across users
    from hycloud_core.store.collector import Collector

    # the shares are split by the link counts of the last upkeep round
    Collector(alice.records.table, alice.objects, str(alice.ns.root).rsplit("/", 1)[0], 3600).run()

    status, body = call("alice", "GET", "/v1/usage")
    assert status == 200 and body["user"] == "alice"
    u = body["usage"]
    assert (u["efs_files"], u["efs_dirs"], u["efs_bytes"]) == (1, 2, 700)
    assert (u["link_files"], u["s3_objects"], u["s3_bytes"], u["s3_logical_bytes"]) == (2, 1, 3600, 7200)
    assert u["dedup_saved_bytes"] == 3600
    assert body["shared"]["shared_objects"] == 1 and body["shared"]["shared_bytes"] == 3600
    assert body["shared"]["attributed_bytes"] == pytest.approx(3600 * 2 / 3)
    assert set(body["costs"]) == {"hybrid", "all-s3", "all-efs", "s3-files"}
    for cost in body["costs"].values():
        assert cost["total"] == pytest.approx(sum(cost["lines"].values()), abs=1e-5)
        assert cost["logical_bytes"] == 700 + 7200
    assert body["costs"]["all-s3"]["billed_bytes"] == {"s3": 7900}
    assert body["costs"]["hybrid"]["billed_bytes"]["s3"] == 3600
    assert body["costs"]["s3-files"]["billed_bytes"] == {"s3": 7900, "s3files_fs": 7900}  # all under 128 KiB
    assert body["prices"] == {"region": "us-east-1", "date": load_prices().date}


def test_usage_is_per_user_and_needs_a_key(cloud):
    call, fs, s3 = cloud
    call("alice", "PUT", "/v1/files", query={"path": "/a"}, body=b"a" * 10)
    status, body = call("bob", "GET", "/v1/usage")
    assert status == 200 and body["usage"]["files"] == 0 and body["usage"]["efs_dirs"] == 1
    assert body["costs"]["all-s3"]["total"] == 0
    assert call(None, "GET", "/v1/usage")[0] == 401


def test_records_source_agrees_with_the_walk_except_directories(cloud):
    call, fs, s3 = cloud
    call("alice", "PUT", "/v1/files", query={"path": "/d/notes.txt"}, body=b"n" * 700)
    call("alice", "POST", "/v1/dirs", body={"path": "/d"})
    call("alice", "PUT", "/v1/files", query={"path": "/d/notes.txt"}, body=b"n" * 700)
    upload_large(fs("alice"), s3, BUCKET, BIG, "/d/big.bin")
    walked = call("alice", "GET", "/v1/usage")[1]
    status, recorded = call("alice", "GET", "/v1/usage", query={"source": "records"})
    assert status == 200 and recorded["source"] == "records" and walked["source"] == "walk"
    keys = ("files", "efs_bytes", "efs_data_metered_bytes", "s3_objects", "s3_bytes", "s3_logical_bytes")
    assert {k: recorded["usage"][k] for k in keys} == {k: walked["usage"][k] for k in keys}
    assert (walked["usage"]["efs_dirs"], recorded["usage"]["efs_dirs"]) == (2, 0)
    assert call("alice", "GET", "/v1/usage", query={"source": "scan"})[0] == 400


def test_packed_files_count_their_segments_stored_bytes_from_the_records(cloud, tmp_path):
    """A packed file's bytes are in S3 (its segment record's bytes, a rewritten member's included)."""
    call, fs, s3 = cloud
    alice = fs("alice")
    files = {f"/c{i}": bytes([i]) * (6000 + i) for i in range(3)}
    for path, data in files.items():
        alice.put_small(path, data, hashlib.sha256(data).hexdigest())
    settings = segments.Settings(pack_after_s=0, grace_s=3600)
    ns_root = str(tmp_path / "efs" / "ns")
    assert segments.run(Records(TABLE).table, s3, BUCKET, ns_root, settings, clean=False).packed_files == 3
    alice.put_small("/c0", b"back", hashlib.sha256(b"back").hexdigest())
    status, body = call("alice", "GET", "/v1/usage")
    usage, total = body["usage"], sum(map(len, files.values()))
    assert status == 200 and (usage["segment_files"], usage["efs_files"]) == (2, 1)
    assert usage["segment_bytes"] == total - 6000 and usage["segment_stored_bytes"] == total
    assert usage["s3_stored_bytes"] == total and usage["logical_bytes"] == total - 6000 + 4
    assert body["costs"]["hybrid"]["billed_bytes"]["s3"] == total
    recorded = call("alice", "GET", "/v1/usage", query={"source": "records"})[1]["usage"]
    keys = ("segment_files", "segment_bytes", "segment_stored_bytes", "efs_files", "s3_stored_bytes")
    assert {k: recorded[k] for k in keys} == {k: usage[k] for k in keys}
