"""Cold small files packed into S3 segments on the deployed cloud (docs/SEGMENTS.md): the upkeep
function packs a user's files (unused for 0 s, told by the event), they read back byte-exact
through the API by ranged GETs of the segment, a rewrite puts one back in EFS and its segment's
live share falls, the cleaner compacts the segment and deletes the old one after its grace."""

from __future__ import annotations

import hashlib
import os
import stat
import time

import pytest

from hycloud.cli.usage import class_rows
from tests.e2e.conftest import _make_user

pytestmark = [pytest.mark.e2e]

GRACE_S = 3
OCTET = "application/octet-stream"  # else API Gateway answers the bytes base64-encoded


@pytest.fixture(scope="module")
def owner(deployment):
    return _make_user(deployment, "segments")


def segments_of(deployment, user) -> list[str]:
    s3, bucket = deployment.client("s3"), deployment.outputs["BucketName"]
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=f"segments/{user.ns_key}/")
    return sorted(o["Key"] for o in listed.get("Contents", []))


def segment_record(deployment, user, segment_id: str) -> dict | None:
    item = (
        deployment.client("dynamodb")
        .get_item(
            TableName=deployment.outputs["TableName"],
            ConsistentRead=True,
            Key={"pk": {"S": f"SEG#{user.ns_key}"}, "sk": {"S": segment_id}},
        )
        .get("Item")
    )
    return {k: list(v.values())[0] for k, v in item.items()} if item else None


def run(deployment, user, **options) -> dict:
    """One segment round for this user alone (other tests' files are not packed)."""
    return deployment.upkeep(walk=False, segments={"users": [user.ns_key], **options})["segments"]


def is_stub(path) -> bool:
    st = os.lstat(path)
    return bool(st.st_mode & stat.S_ISVTX) and st.st_size < 512


def test_packed_files_read_back_rewrite_compact_and_old_segment_deleted(deployment, owner):
    sdk, api = owner.sdk(), owner.api()
    files = {f"/cold/f{i}.bin": os.urandom(5000 + 7919 * i) for i in range(4)}
    sdk.mkdir("/cold")
    for path, data in files.items():
        sdk.put_bytes(path, data)

    packed = run(deployment, owner, pack_after_s=0, clean=False)
    assert packed["packed_files"] == 4 and packed["packed_bytes"] == sum(map(len, files.values()))
    [old_key] = segments_of(deployment, owner)
    old_id = old_key.rsplit("/", 1)[1]
    for path, data in files.items():
        assert is_stub(owner.ns_dir() / path.lstrip("/"))
        answer = api.call("GET", "/v1/files", params={"path": path}, headers={"Accept": OCTET})
        assert answer.status_code == 200 and answer.content == data
        assert answer.headers["x-hycloud-sha256"] == hashlib.sha256(data).hexdigest()
        assert sdk.stat(path)["size"] == len(data)
        assert sdk.stat(path)["sha256"] == hashlib.sha256(data).hexdigest()
    assert sorted(e["name"] for e in sdk.ls("/cold")) == ["f0.bin", "f1.bin", "f2.bin", "f3.bin"]
    usage = api.call("GET", "/v1/usage").json()["usage"]  # packed: bytes in S3, stubs in EFS
    total = sum(map(len, files.values()))
    assert (usage["segment_files"], usage["segment_objects"], usage["efs_files"]) == (4, 1, 0)
    assert usage["segment_bytes"] == usage["segment_stored_bytes"] == usage["logical_bytes"] == total
    for store, key in (("EFS", "efs_metered_bytes"), ("S3", "s3_stored_bytes")):  # tiers add up
        assert sum(b for name, _, _, b in class_rows(usage) if name.startswith(store)) == usage[key]

    files["/cold/f3.bin"] = b"rewritten: back in EFS whole"
    sdk.put_bytes("/cold/f3.bin", files["/cold/f3.bin"])
    assert not is_stub(owner.ns_dir() / "cold" / "f3.bin")
    counted = run(deployment, owner, pack=False, min_live_share=0.0)  # counts, compacts nothing
    record = segment_record(deployment, owner, old_id)
    assert int(record["live_bytes"]) == int(record["total_bytes"]) - (5000 + 7919 * 3)
    assert counted["compacted"] == [] and counted["live"][old_id] < 1.0

    compacted = run(deployment, owner, pack=False, min_live_share=0.9, grace_s=GRACE_S)
    assert compacted["compacted"] == [old_id] and len(compacted["segments_written"]) == 1
    retired_at = time.time()
    assert old_key in segments_of(deployment, owner)  # kept for readers of an old stub
    assert segment_record(deployment, owner, old_id)["state"] == "retired"
    for path, data in files.items():
        assert sdk.get_bytes(path) == data

    time.sleep(max(0.0, retired_at + GRACE_S + 1 - time.time()))
    swept = run(deployment, owner, pack=False, grace_s=GRACE_S)
    assert swept["deleted"] == [old_id]
    assert segments_of(deployment, owner) == [f"segments/{owner.ns_key}/{compacted['segments_written'][0]}"]
    assert segment_record(deployment, owner, old_id) is None
    for path, data in files.items():
        assert sdk.get_bytes(path) == data
