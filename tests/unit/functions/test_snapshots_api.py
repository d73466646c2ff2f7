"""Snapshots through the controller under moto: POST /v1/snapshots copies a folder, its listing,
stat and files read it as it was after later writes, a write into it is 403, a restore brings it
back byte for byte (409 on a taken place, 201 with `to` or `replace`), DELETE removes it."""

from __future__ import annotations

import hashlib

import pytest

import hycloud_core.fs.snapshots
from tests.unit.functions.test_versions_api import call, put, read  # noqa: F401 (a fixture)


@pytest.fixture(autouse=True)
def _copied_within_the_request(monkeypatch):
    """These trees are copied within `create` (ready at once), however loaded the machine."""
    monkeypatch.setattr(hycloud_core.fs.snapshots, "INLINE_S", 30.0)


def test_create_browse_read_refuse_writes_restore_and_remove(call):  # noqa: F811
    for folder in ("/d", "/d/sub"):
        assert call("POST", "/v1/dirs", body={"path": folder})[0] == 201
    put(call, "/d/a.txt", b"alpha")
    put(call, "/d/sub/b.txt", b"beta")
    status, made = call("POST", "/v1/snapshots", body={"path": "/d", "name": "s1"})
    assert status == 201 and made["snapshot"]["files"] == 2 and made["snapshot"]["state"] == "ready"
    assert (
        call("POST", "/v1/snapshots", body={"path": "/d", "name": "s1"})[1]["error"]["code"]
        == "already-exists"
    )
    assert call("POST", "/v1/snapshots", body={"path": "/d", "name": "../x"})[0] == 400
    assert call("POST", "/v1/snapshots", body={"path": "/nope"})[0] == 404

    put(call, "/d/a.txt", b"changed")
    assert call("DELETE", "/v1/files", query={"path": "/d/sub/b.txt"})[0] == 200

    status, listed = call("GET", "/v1/snapshots")
    assert status == 200 and [s["name"] for s in listed["snapshots"]] == ["s1"]
    assert listed["totals"] == {"bytes": 9, "files": 2, "snapshots": 1}
    assert call("GET", "/v1/usage", query={"source": "records"})[1]["snapshots"] == listed["totals"]
    status, page = call("GET", "/v1/snapshots/s1/dirs", query={"path": "/sub"})
    assert status == 200 and [e["name"] for e in page["entries"]] == ["b.txt"]
    assert call("GET", "/v1/snapshots/s1/stat", query={"path": "/a.txt"})[1]["size"] == 5
    status, data = call("GET", "/v1/snapshots/s1/files", query={"path": "/a.txt"})
    assert status == 200 and data == b"alpha"
    assert call("GET", "/v1/snapshots/nope/dirs")[0] == 404
    assert call("GET", "/v1/stat", query={"path": "/s1"})[0] == 404  # nothing of it in the namespace

    headers = {
        "x-hycloud-sha256": hashlib.sha256(b"x").hexdigest(),
        "content-type": "application/octet-stream",
    }
    status, refused = call(
        "PUT", "/v1/snapshots/s1/files", query={"path": "/a.txt"}, body=b"x", headers=headers
    )
    assert status == 403 and refused["error"]["code"] == "snapshot-read-only"
    assert call("DELETE", "/v1/snapshots/s1/files", query={"path": "/a.txt"})[0] == 403
    assert call("GET", "/v1/snapshots/s1/files", query={"path": "/a.txt"})[1] == b"alpha"

    status, taken = call("POST", "/v1/snapshots/s1/restore", body={})
    assert status == 409 and taken["error"]["code"] == "already-exists"
    status, back = call("POST", "/v1/snapshots/s1/restore", body={"to": "/d2"})
    assert status == 201 and back["entry"]["path"] == "/d2"
    assert read(call, "/d2/a.txt") == b"alpha" and read(call, "/d2/sub/b.txt") == b"beta"
    status, back = call("POST", "/v1/snapshots/s1/restore", body={"replace": True})
    assert status == 201 and read(call, "/d/a.txt") == b"alpha"

    status, removed = call("DELETE", "/v1/snapshots/s1")
    assert status == 200 and removed["removed"]["name"] == "s1"
    assert call("GET", "/v1/snapshots")[1]["snapshots"] == []
    assert call("DELETE", "/v1/snapshots/s1")[0] == 404
