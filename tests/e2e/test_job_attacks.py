"""Delta jobs leak nothing of content the caller cannot read.

A second user who knows only another user's content hash tries to use it as the base of delta
uploads and downloads: learning its size from error text, its bytes one guess at a time from
whether a job succeeds, or linking it into their own namespace without proof of possession.
Every answer must be the same whether the hash exists or not and whether a guess is right.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time

import pytest
import zstandard

from hycloud_core import content
from hycloud_core.delta.wire import (
    DELTA_HEADER,
    DELTA_MAGIC,
    OP_COPY,
    OP_END,
    STREAM_VERSION,
    put_varint,
    result_hash,
    zigzag,
)
from tests.e2e.conftest import _make_user

pytestmark = pytest.mark.e2e
MiB = 1024 * 1024
JOB_ID = re.compile(r"\b(dl|ul)-[0-9a-f]{40}(-\d+)?\b")


def hand_made_delta(old_size: int, first_block: int, count: int, result: bytes) -> bytes:
    """Block size 1: copy `count` bytes of the base from `first_block`, claim `result`'s hash."""
    ops = bytearray(DELTA_HEADER.pack(DELTA_MAGIC, STREAM_VERSION, 0, 1, old_size))
    ops.append(OP_COPY)
    put_varint(zigzag(first_block), ops)
    put_varint(count, ops)
    ops.append(OP_END)
    put_varint(len(result), ops)
    check = result_hash()
    check.update(result)
    ops += check.digest()
    return zstandard.ZstdCompressor().compress(bytes(ops))


def outcome(user, method: str, url: str, **kwargs) -> tuple[int, str, str]:
    """(status, body, final job state) with job ids blanked: all a caller can observe."""
    http = user.sdk().http
    r = http.session.request(method, http.base + url, timeout=60, **kwargs)
    final = ""
    if r.status_code == 202:
        job, deadline = r.json()["job"], time.monotonic() + 300
        while True:
            s = http.session.get(http.base + "/v1/delta/jobs", params={"id": job, "wait": 10}, timeout=60)
            if s.status_code != 200 or s.json().get("state") != "running" or time.monotonic() > deadline:
                final = f"{s.status_code} {s.text}"
                break
    return r.status_code, JOB_ID.sub("<job>", r.text), JOB_ID.sub("<job>", final)


@pytest.fixture(scope="module")
def victim_and_thief(deployment, tmp_path_factory):
    victim, thief = _make_user(deployment, "victim"), _make_user(deployment, "thief")
    secret = os.urandom(3 * MiB + 17)
    folder = tmp_path_factory.mktemp("attack")
    (folder / "secret").write_bytes(secret)
    victim.cli("put", str(folder / "secret"), "/secret.bin")
    (folder / "mine").write_bytes(os.urandom(3 * MiB))
    thief.cli("put", str(folder / "mine"), "/mine.bin")
    return victim, thief, secret


def upload_attempts(secret: bytes) -> dict[str, tuple[str, bytes, bytes]]:
    """(base hash, delta, claimed result) for each thing the thief tries."""
    h = content.hash_bytes(secret)
    unknown = hashlib.sha256(os.urandom(32)).hexdigest()
    i, right = 1234, secret[1234:1235]
    wrong = bytes([right[0] ^ 0x5A])
    return {
        "size probe (wrong size)": (h, hand_made_delta(1, i, 1, right), right),
        "right guess": (h, hand_made_delta(len(secret), i, 1, right), right),
        "wrong guess": (h, hand_made_delta(len(secret), i, 1, wrong), wrong),
        "whole file": (h, hand_made_delta(len(secret), 0, len(secret), secret), secret),
        "unknown hash, right guess": (unknown, hand_made_delta(len(secret), i, 1, right), right),
        "unknown hash, wrong guess": (unknown, hand_made_delta(len(secret), i, 1, wrong), wrong),
    }


def stored_paths(deployment, user) -> dict[str, str]:
    """Every file record of a user: path -> content hash (large) or sha256 (small)."""
    items = deployment.client("dynamodb").query(
        TableName=deployment.outputs["TableName"],
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"NS#{user.name}"}},
        ConsistentRead=True,
    )["Items"]
    return {
        i["sk"]["S"][2:]: (i.get("content_hash") or i.get("sha256") or {"S": ""})["S"]
        for i in items
        if i["sk"]["S"].startswith("F#")
    }


@pytest.mark.parametrize("target", ["/loot.bin", "/mine.bin"])
def test_delta_upload_against_anothers_content_learns_nothing(deployment, victim_and_thief, target):
    victim, thief, secret = victim_and_thief
    before = stored_paths(deployment, thief)
    seen = {}
    for name, (base, delta, result) in upload_attempts(secret).items():
        seen[name] = outcome(
            thief,
            "PUT",
            "/v1/delta/upload",
            params={"path": target, "base_hash": base, "content_hash": content.hash_bytes(result)},
            data=delta,
            headers={"Content-Type": "application/octet-stream"},
        )
    assert len(set(seen.values())) == 1, json.dumps(seen, indent=1)  # right, wrong, absent: one answer
    status, body, final = next(iter(seen.values()))
    assert status == 409 and json.loads(body)["error"]["code"] == "version-mismatch" and final == ""
    text = json.dumps(seen)
    assert str(len(secret)) not in text and "Traceback" not in text
    assert stored_paths(deployment, thief) == before  # nothing linked, nothing replaced
    assert not (thief.ns_dir() / "loot.bin").exists()
    link = json.loads((thief.ns_dir() / "mine.bin").read_bytes())
    assert link["content_hash"] != content.hash_bytes(secret)


def test_delta_download_against_anothers_content_learns_nothing(deployment, victim_and_thief):
    victim, thief, secret = victim_and_thief
    unknown = hashlib.sha256(os.urandom(32)).hexdigest()
    seen = {
        name: outcome(thief, "POST", "/v1/delta/download", json={"path": "/mine.bin", "base_hash": base})
        for name, base in (("victim's content", content.hash_bytes(secret)), ("no such content", unknown))
    }
    assert len(set(seen.values())) == 1, json.dumps(seen, indent=1)
    status, body, final = seen["victim's content"]
    assert status == 409 and json.loads(body)["error"]["code"] == "base-unknown" and final == ""
    assert "Traceback" not in json.dumps(seen) and str(len(secret)) not in json.dumps(seen)


def test_the_same_hand_made_delta_works_on_the_callers_own_content(deployment, victim_and_thief, tmp_path):
    """The refusals above are the base rule at work, not a malformed delta: against content of
    their own the thief's delta is applied and linked."""
    _, thief, _ = victim_and_thief
    own = os.urandom(3 * MiB + 5)
    (tmp_path / "own").write_bytes(own)
    thief.cli("put", str(tmp_path / "own"), "/own.bin")
    piece = own[100:5000]
    status, body, final = outcome(
        thief,
        "PUT",
        "/v1/delta/upload",
        params={
            "path": "/own.bin",
            "base_hash": content.hash_bytes(own),
            "content_hash": content.hash_bytes(piece),
        },
        data=hand_made_delta(len(own), 100, len(piece), piece),
        headers={"Content-Type": "application/octet-stream"},
    )
    assert status == 202 and json.loads(final[4:])["state"] == "ready", (status, body, final)
    thief.cli("get", "/own.bin", str(tmp_path / "back"))
    assert (tmp_path / "back").read_bytes() == piece
