"""The trash on the deployed cloud: `rm -r` of a small tree with one large file (S3) moves it into
the trash at once, `trash ls` shows it, `trash restore` brings it back byte for byte, and after
a purge with a retention made short here the large file's object is collected, never before."""

from __future__ import annotations

import hashlib
import json
import os
import uuid

import pytest

from hycloud_core import content
from hycloud_core.constants import MiB

pytestmark = pytest.mark.e2e


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def in_s3(deployment, content_hash: str) -> bool:
    s3, key = deployment.client("s3"), content.object_key(content_hash)
    found = s3.list_objects_v2(Bucket=deployment.outputs["BucketName"], Prefix=key)
    return found.get("KeyCount", 0) == 1


@pytest.mark.exclusive  # the collector runs with no grace period: nothing else may be in flight
def test_rm_r_to_trash_restore_and_purge_then_collect(deployment, alice, tmp_path):
    sdk, top = alice.sdk(), f"/trash-{uuid.uuid4().hex[:8]}"
    small = {f"{top}/a.txt": os.urandom(700), f"{top}/sub/b.txt": os.urandom(3000), f"{top}/sub/c": b""}
    for path, data in small.items():
        sdk.put_bytes(path, data, parents=True)
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(2 * MiB + 4096))  # above the small-file threshold: an S3 object
    h = sdk.put(big, f"{top}/sub/big.bin")["content_hash"]
    assert in_s3(deployment, h)

    removed = json.loads(alice.cli("--json", "rm", "-r", top).stdout)
    item = removed["trash"]
    assert (item["path"], item["type"]) == (top, "dir")
    assert item["pending"] or removed["files"] == item["files"] == 4  # counted inline, or left to the listing
    assert not sdk.exists(top) and top.lstrip("/") not in [e["name"] for e in sdk.ls("/")]
    listed = json.loads(alice.cli("--json", "trash", "ls").stdout)
    item = next(i for i in listed["items"] if i["item"] == item["item"])
    assert (item["files"], item["pending"]) == (4, False)
    trash = alice.api().call("GET", "/v1/usage", params={"source": "records"}).json()["trash"]
    assert trash["bytes"] >= item["size"] == sum(map(len, small.values())) + big.stat().st_size

    sdk.put_bytes(f"{top}/a.txt", b"new", parents=True)  # the path is free at once: a restore is refused
    taken = alice.api().call("POST", "/v1/trash/restore", json={"item": item["item"]})
    assert taken.status_code == 409 and taken.json()["error"]["code"] == "already-exists"
    sdk.rm(f"{top}/a.txt")
    sdk.rmdir(top)
    sdk.trash_restore(item["item"])
    for path, data in small.items():
        assert sha(sdk.get_bytes(path)) == sha(data)
    sdk.get(f"{top}/sub/big.bin", tmp_path / "back.bin")
    assert sha((tmp_path / "back.bin").read_bytes()) == sha(big.read_bytes())

    again = sdk.rmdir(top, recursive=True)["trash"]
    sdk.trash_empty(next(i["item"] for i in sdk.trash()["items"] if i["path"] == f"{top}/a.txt"))
    trash_round = {"users": [alice.id], "collect": True}  # the purge alone, then a collection round
    kept = deployment.upkeep(grace_s=0, walk=False, trash=trash_round)  # within the retention: kept
    assert h not in kept["collected"]["reclaimed"] and in_s3(deployment, h)
    assert again["item"] in [i["item"] for i in sdk.trash()["items"]]

    purged = deployment.upkeep(grace_s=0, walk=False, trash={**trash_round, "retention_s": 0})
    assert purged["trash_purged"]["items"] >= 1 and h in purged["collected"]["reclaimed"]
    assert not in_s3(deployment, h) and again["item"] not in [i["item"] for i in sdk.trash()["items"]]
