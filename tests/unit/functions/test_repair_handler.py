"""The repair function's three jobs under moto, three regions' buckets and a namespace on disk:
repair rebuilds what an instance lost, the sweep reclaims what no link names, and a migration
refuses a ring it cannot use. The deployed workflow around them is tests/e2e/test_upkeep_repair.py."""

from __future__ import annotations

import hashlib
import io
import json
import os

import boto3
import pytest
from moto import mock_aws

from hycloud_core.codec.erasure import encode_stream
from hycloud_core.codec.layout import Block, Chunk, CodedLayout, block_key, placed
from hycloud_core.fs import Namespace
from hycloud_core.fs.blocks import b64
from hycloud_core.linkfile import LinkFile
from tests.conftest import LambdaContext, load_function, make_stores

REGIONS = ["us-east-1", "us-west-2", "eu-west-1"]
BUCKETS = {r: f"hycloud-{r}" for r in REGIONS}
TABLE, USER, CHUNK = "hycloud-test", "u-repair", 64 * 1024


@pytest.fixture
def cloud(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGIONS[0])
    monkeypatch.setenv("AWS_REGION", REGIONS[0])
    monkeypatch.setenv("HYCLOUD_BUCKET", BUCKETS[REGIONS[0]])
    monkeypatch.setenv("HYCLOUD_TABLE", TABLE)
    monkeypatch.setenv("HYCLOUD_EFS_ROOT", str(tmp_path / "efs"))
    others = [{"region": r, "bucket": BUCKETS[r]} for r in REGIONS[1:]]
    monkeypatch.setenv("HYCLOUD_INSTANCES", json.dumps(others))
    with mock_aws():
        make_stores(BUCKETS[REGIONS[0]], TABLE)
        for region in REGIONS[1:]:
            boto3.client("s3", region_name=region).create_bucket(
                Bucket=BUCKETS[region], CreateBucketConfiguration={"LocationConstraint": region}
            )
        yield load_function("repair"), tmp_path / "efs"


def run(handler, event: dict) -> dict:
    return handler.handler(event, LambdaContext())


def _s3(region: str):
    return boto3.client("s3", region_name=region)


def _coded_file(efs, path: str, data: bytes) -> CodedLayout:
    """Blocks stored at the instances the ring places them on, and the link file naming them."""
    chunks, by_hash = [], {}
    for chunk in encode_stream(io.BytesIO(data), 3, 2, CHUNK):
        hashes = [hashlib.sha256(b).hexdigest() for b in chunk.blocks]
        by_hash |= dict(zip(hashes, chunk.blocks, strict=True))
        chunks.append(
            Chunk(
                chunk.length, chunk.key, [Block(h, len(b)) for h, b in zip(hashes, chunk.blocks, strict=True)]
            )
        )
    layout = placed(CodedLayout(3, 2, CHUNK, chunks), len(data), REGIONS)
    for b in (b for c in layout.chunks for b in c.blocks):
        _s3(b.instance).put_object(
            Bucket=BUCKETS[b.instance],
            Key=block_key(b.hash),
            Body=by_hash[b.hash],
            ChecksumSHA256=b64(b.hash),
        )
    link = LinkFile(content_hash="c" * 64, size=len(data), mtime=0, erasure=layout.to_dict())
    Namespace(str(efs / "ns"), USER).write_link(path, link, parents=True)
    return layout


def _held(region: str) -> set[str]:
    listed = _s3(region).list_objects_v2(Bucket=BUCKETS[region], Prefix="blocks/")
    return {o["Key"].removeprefix("blocks/") for o in listed.get("Contents", [])}


def test_repair_rebuilds_the_blocks_an_instance_lost_byte_exact(cloud):
    handler, efs = cloud
    layout = _coded_file(efs, "/data/a.bin", os.urandom(5 * CHUNK + 7))
    lost = sorted(_held("us-west-2"))
    originals = {
        h: _s3("us-west-2").get_object(Bucket=BUCKETS["us-west-2"], Key=block_key(h))["Body"].read()
        for h in lost
    }
    for h in lost:
        _s3("us-west-2").delete_object(Bucket=BUCKETS["us-west-2"], Key=block_key(h))
    done = run(handler, {"region": "us-west-2"})
    assert done["state"] == "succeeded" and done["files"] == 1 and done["rebuilt"] == len(lost) > 0, done
    assert done["unrecoverable"] == 0 and done["checked"] == sum(
        1 for c in layout.chunks for b in c.blocks if b.instance == "us-west-2"
    )
    for h in lost:
        body = _s3("us-west-2").get_object(Bucket=BUCKETS["us-west-2"], Key=block_key(h))["Body"].read()
        assert body == originals[h]


def test_repair_of_a_region_with_no_instance_fails_with_its_name(cloud):
    handler, _ = cloud
    out = run(handler, {"region": "ap-south-1"})
    assert (out["region"], out["state"], out["error"]) == (
        "ap-south-1",
        "failed",
        "no instance in ap-south-1",
    )


@pytest.mark.parametrize(
    ("event", "error"),
    [
        ({}, "RepairStep: the event lacks 'region'"),
        ({"region": "us-west-2", "cursor": "3"}, "RepairStep: 'cursor' must be"),
        ({"action": "purge"}, "unknown coded-block action 'purge'"),
        ({"action": "migrate", "instances": [], "phase": "later"}, "MigrateStep: 'phase' must be"),
        ({"action": "sweep", "grace_s": "soon"}, "SweepSpec: 'grace_s' must be"),
    ],
)
def test_a_step_that_is_not_a_spec_fails_naming_the_key(cloud, event, error):
    handler, _ = cloud
    out = run(handler, event)
    assert out["state"] == "failed" and out["error"].startswith(error), out


def test_a_repair_step_carries_its_counts_forward(cloud, monkeypatch):
    """A step out of time answers its spec advanced, which the workflow hands to the next step;
    each step gets at least one file done, however short its slice."""
    handler, efs = cloud
    layouts = [_coded_file(efs, f"/{name}.bin", os.urandom(CHUNK + 1)) for name in ("a", "b")]
    monkeypatch.setattr(handler, "SLICE_S", 0.0)
    steps = [run(handler, {"region": "us-west-2"})]
    while steps[-1]["state"] == "running" and len(steps) < 5:
        steps.append(run(handler, steps[-1]))
    assert [(s["state"], s["cursor"], s["files"]) for s in steps] == [("running", 1, 1), ("succeeded", 2, 2)]
    held = sum(1 for layout in layouts for c in layout.chunks for b in c.blocks if b.instance == "us-west-2")
    assert 0 < steps[0]["checked"] < steps[1]["checked"] == held


def test_the_sweep_reclaims_unlinked_blocks_in_every_region_and_keeps_linked_ones(cloud):
    handler, efs = cloud
    _coded_file(efs, "/kept.bin", os.urandom(2 * CHUNK))
    kept = {r: _held(r) for r in REGIONS}
    for region in REGIONS:  # an upload's blocks that no commit ever named
        _s3(region).put_object(
            Bucket=BUCKETS[region], Key=block_key(region.encode().hex().ljust(64, "0")), Body=b"x"
        )
    swept = run(handler, {"action": "sweep", "grace_s": 0})
    assert swept["state"] == "succeeded" and swept["deleted"] == {r: 1 for r in REGIONS}, swept
    assert {r: _held(r) for r in REGIONS} == kept


def test_the_sweep_keeps_unlinked_blocks_younger_than_the_grace_period(cloud):
    handler, _ = cloud
    _s3("eu-west-1").put_object(Bucket=BUCKETS["eu-west-1"], Key=block_key("ab" * 32), Body=b"x")
    swept = run(handler, {"action": "sweep", "grace_s": 3600})
    assert swept["deleted"] == {} and _held("eu-west-1") == {"ab" * 32}


@pytest.mark.parametrize(
    ("instances", "error"),
    [
        ("nope", "MigrateStep: 'instances' must be"),
        ([{"bucket": "no-region"}], "instances: a list of {region, bucket, ...} objects"),
        (
            [{"region": "us-west-2", "bucket": BUCKETS["us-west-2"]}],
            "a ring needs 3 or more distinct regions",
        ),
        (
            [
                {"region": "ap-south-1", "bucket": "missing"},
                {"region": "us-west-2", "bucket": BUCKETS["us-west-2"]},
            ],
            "the bucket missing of ap-south-1 cannot be reached",
        ),
    ],
)
def test_a_migration_to_a_ring_it_cannot_use_fails_and_records_nothing(cloud, instances, error):
    handler, _ = cloud
    out = run(handler, {"action": "migrate", "instances": instances})
    assert out["state"] == "failed" and out["error"].startswith(error), out
    ring = boto3.client("dynamodb").scan(TableName=TABLE)["Items"]
    assert not [item for item in ring if "RING" in item["pk"]["S"]]


def test_the_dispatcher_refuses_an_operator_job_that_is_not_a_spec_before_queueing_it(cloud, monkeypatch):
    from hycloud_core.jobs.specs import SpecError

    monkeypatch.setenv("HYCLOUD_REPAIR_STATE_MACHINE_ARN", "arn:aws:states:us-east-1:1:stateMachine:r")
    dispatcher = load_function("dispatcher")
    with pytest.raises(SpecError, match="unknown coded-block action 'repair-all'"):
        dispatcher.handler({"queue": {"action": "repair-all"}}, LambdaContext())
    items = boto3.client("dynamodb").scan(TableName=TABLE)["Items"]
    assert items == []  # nothing queued
