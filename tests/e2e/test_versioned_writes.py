"""Version-checked writes through the REST API: `If-Match: <content hash>` and `If-None-Match: *`
on file PUT and DELETE, move and copy; a stale version is refused with 409 and changes nothing.
A file's version is the `content_hash` the API reports for it, small or large."""

from __future__ import annotations

import hashlib
import uuid

import pytest

from hycloud_core import content

pytestmark = pytest.mark.e2e


def put(api, path: str, data: bytes, **headers: str):
    headers = {
        "Content-Type": "application/octet-stream",
        "x-hycloud-sha256": hashlib.sha256(data).hexdigest(),
        **headers,
    }
    return api.call("PUT", "/v1/files", params={"path": path}, data=data, headers=headers)


def body(api, path: str) -> bytes:
    return api.call(
        "GET", "/v1/files", params={"path": path}, headers={"Accept": "application/octet-stream"}
    ).content


def code(response) -> str:
    return response.json()["error"]["code"]


@pytest.fixture
def home(alice) -> str:
    path = f"/versions-{uuid.uuid4().hex[:8]}"
    assert alice.api().call("POST", "/v1/dirs", json={"path": path}).status_code == 201
    return path


def test_put_only_over_the_version_the_writer_read(alice, home):
    api, f = alice.api(), f"{home}/doc.txt"
    first = put(api, f, b"v1", **{"If-None-Match": "*"})
    assert first.status_code == 201 and first.json()["content_hash"] == content.hash_bytes(b"v1")
    again = put(api, f, b"other", **{"If-None-Match": "*"})
    assert again.status_code == 409 and code(again) == "version-mismatch"

    stale = put(api, f, b"v2 from a stale reader", **{"If-Match": content.hash_bytes(b"older")})
    assert stale.status_code == 409 and code(stale) == "version-mismatch" and body(api, f) == b"v1"
    fresh = put(api, f, b"v2", **{"If-Match": first.json()["content_hash"]})
    assert fresh.status_code == 201 and body(api, f) == b"v2"
    by_sha = put(api, f, b"v3", **{"if-match": hashlib.sha256(b"v2").hexdigest()})  # the body's sha256 too
    assert by_sha.status_code == 201 and body(api, f) == b"v3"
    bad = put(api, f, b"v4", **{"If-Match": "not-a-hash"})
    assert bad.status_code == 400 and code(bad) == "bad-version" and body(api, f) == b"v3"


def test_delete_move_and_copy_check_the_version(alice, home):
    api, a, b = alice.api(), f"{home}/a.txt", f"{home}/b.txt"
    assert put(api, a, b"aaa").status_code == 201 and put(api, b, b"bbb").status_code == 201
    stale = {"If-Match": content.hash_bytes(b"not a")}
    refused = api.call("DELETE", "/v1/files", params={"path": a}, headers=stale)
    assert refused.status_code == 409 and body(api, a) == b"aaa"
    move = api.call("POST", "/v1/move", json={"src": a, "dst": b}, headers={"If-None-Match": "*"})
    assert move.status_code == 409 and body(api, a) == b"aaa" and body(api, b) == b"bbb"
    copy = api.call(
        "POST", "/v1/copy", json={"src": a, "dst": b}, headers={"If-Match": content.hash_bytes(b"bbb")}
    )
    assert copy.status_code in (200, 201) and body(api, b) == b"aaa"
    gone = api.call(
        "DELETE", "/v1/files", params={"path": a}, headers={"If-Match": content.hash_bytes(b"aaa")}
    )
    assert gone.status_code == 200
    assert api.call("GET", "/v1/stat", params={"path": a}).status_code == 404
