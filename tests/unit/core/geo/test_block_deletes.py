"""The sweep deletes unlinked blocks a thousand per request (S3 DeleteObjects), not one by one:
from inside the VPC each request to another region is a reach call, so one per block made a
sweep of a few thousand blocks take minutes."""

from __future__ import annotations

import hashlib

import boto3
import pytest
from moto import mock_aws

from hycloud_core.codec.layout import block_key
from hycloud_core.coded.sweep import sweep_blocks
from hycloud_core.fs import blocks
from hycloud_core.fs.blocks import BlockStore
from hycloud_core.instances import Instance
from hycloud_core.linkfile import LinkFile

REGION, BUCKET = "us-west-2", "blocks-bucket"


@pytest.fixture(autouse=True)
def small_batches(monkeypatch):
    """S3's batch is 1,000 keys; 10 shows the batching with fewer objects to make."""
    monkeypatch.setattr(blocks, "DELETE_BATCH", 10)


@pytest.fixture
def s3():
    with mock_aws():
        client = boto3.client("s3", region_name=REGION)
        client.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        yield client


def _stored(s3, count: int) -> list[str]:
    hashes = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(count)]
    for h in hashes:
        s3.put_object(Bucket=BUCKET, Key=block_key(h), Body=b"x")
    return hashes


def _counting(s3) -> list[str]:
    calls: list[str] = []
    s3.meta.events.register("before-call.s3.*", lambda model, **_: calls.append(model.name))
    return calls


def test_delete_many_sends_one_request_per_batch_of_blocks(s3):
    hashes = _stored(s3, 25)
    calls = _counting(s3)
    BlockStore([Instance(REGION, BUCKET, "relay", "delta")], lambda _r: s3).delete_many(REGION, hashes[:23])
    assert calls == ["DeleteObjects"] * 3
    left = s3.list_objects_v2(Bucket=BUCKET, Prefix="blocks/")["Contents"]
    assert sorted(o["Key"] for o in left) == sorted(block_key(h) for h in hashes[23:])


def test_the_sweep_deletes_unlinked_blocks_in_batches_and_keeps_linked_ones(s3, tmp_path):
    hashes = _stored(s3, 23)
    kept = hashes[:3]
    layout = {"n": 3, "k": 2, "chunk_size": 4, "chunks": [{"blocks": [{"hash": h} for h in kept]}]}
    host = tmp_path / "u-1" / "kept.bin"
    host.parent.mkdir()
    host.write_bytes(LinkFile(content_hash="c", size=4, mtime=0, erasure=layout).to_bytes())
    host.chmod(0o1640)  # the mode that marks a link file
    calls = _counting(s3)
    store = BlockStore([Instance(REGION, BUCKET, "relay", "delta")], lambda _r: s3)
    result = sweep_blocks(store, str(tmp_path), grace_s=0, now=2**40)
    assert result.deleted == {REGION: 20} and result.listed == 23
    assert calls.count("DeleteObjects") == 2 and "DeleteObject" not in calls
    left = s3.list_objects_v2(Bucket=BUCKET, Prefix="blocks/")["Contents"]
    assert sorted(o["Key"] for o in left) == sorted(block_key(h) for h in kept)
