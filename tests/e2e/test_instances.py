"""Several instances in one local cloud: each region's data instance is deployed in its own region,
runs its own functions on its own relay cache folder, is known to the home controller, and the
single-region behaviour of the home instance is unchanged (design: docs/GEO.md)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import boto3
import pytest

from hycloud_core import constants as c
from infra.local import deploy as local

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def instances(deployment) -> dict[str, dict[str, str]]:
    found = local.instances()
    if len(found) < 2:
        pytest.skip("deployed with one region (hycloud:regions)")
    return found


def test_each_instance_bucket_and_jobs_live_in_its_region(deployment, instances):
    assert list(instances)[0] == deployment.env["AWS_DEFAULT_REGION"]
    buckets = {out["BucketName"] for out in instances.values()}
    assert len(buckets) == len(instances)
    for region, out in instances.items():
        s3 = deployment.client("s3", region)
        location = s3.get_bucket_location(Bucket=out["BucketName"])["LocationConstraint"]
        assert (location or "us-east-1") == region
        sfn = deployment.client("stepfunctions", region)
        for key in ("RelayStateMachineArn", "DeltaStateMachineArn"):
            assert f":states:{region}:" in out[key]
            assert sfn.describe_state_machine(stateMachineArn=out[key])["status"] == "ACTIVE"


def test_home_controller_knows_every_data_instance(deployment, instances):
    home, *others = instances
    config = deployment.client("lambda", home).get_function_configuration(
        FunctionName=instances[home]["ControllerFunctionName"]
    )
    listed = json.loads(config["Environment"]["Variables"][c.ENV_INSTANCES])
    assert [
        (item["region"], item["bucket"], item["relayStateMachineArn"], item["deltaStateMachineArn"])
        for item in listed
    ] == [
        (
            r,
            instances[r]["BucketName"],
            instances[r]["RelayStateMachineArn"],
            instances[r]["DeltaStateMachineArn"],
        )
        for r in others
    ]


def _stale_staging_file(folder: Path, name: str) -> Path:
    staging = folder / "staging"
    staging.mkdir(parents=True, exist_ok=True)
    path = staging / name
    path.write_bytes(b"left over")
    old = time.time() - 2 * 86400
    os.utime(path, (old, old))
    return path


def test_each_region_upkeep_cleans_only_its_own_relay_cache(deployment, instances):
    """The local executor maps each region's access point to its own folder."""
    mapping = json.loads((local.STATE / "efs" / "map.json").read_text())
    folders = {}
    for region, out in instances.items():
        (folder,) = [f for arn, f in mapping.items() if arn.endswith(out["AccessPointId"])]
        folders[region] = Path(folder)
    assert len(set(folders.values())) == len(instances)
    home, remote, *_ = instances
    mine = _stale_staging_file(folders[remote], "remote.part")
    theirs = _stale_staging_file(folders[home], "home.part")
    answer = deployment.client("lambda", remote).invoke(
        FunctionName=instances[remote]["CacheUpkeepFunctionName"],
        Payload=json.dumps({"walk": False}).encode(),
    )
    result = json.loads(answer["Payload"].read())
    assert "FunctionError" not in answer, result
    assert result["staging_removed"] == 1 and not mine.exists() and theirs.exists()
    theirs.unlink()


@pytest.mark.parametrize("size", [4096, 3 * MiB], ids=["small", "large"])
def test_put_get_through_the_cli_with_instances_deployed(deployment, instances, alice, tmp_path, size):
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(size))
    result = json.loads(alice.cli("--json", "put", "-p", str(src), f"/geo/{size}.bin").stdout)
    assert result["size"] == size and result["storage"] == ("large" if size > 2 * MiB else "small")
    alice.cli("get", f"/geo/{size}.bin", str(tmp_path / "back.bin"))
    assert (tmp_path / "back.bin").read_bytes() == src.read_bytes()
    if size > 2 * MiB:  # large content goes to the home instance's bucket, as with one instance
        home, *others = instances
        keys = {
            region: [
                o["Key"]
                for page in deployment.client("s3", region)
                .get_paginator("list_objects_v2")
                .paginate(Bucket=instances[region]["BucketName"])
                for o in page.get("Contents", [])
            ]
            for region in instances
        }
        assert any(result["content_hash"] in key for key in keys[home])
        assert not any(result["content_hash"] in key for region in others for key in keys[region])


def test_instances_route_lists_every_instance_with_a_reachable_endpoint(deployment, instances, alice):
    listed = alice.sdk().instances()
    assert [(i["region"], i["bucket"], i["home"]) for i in listed] == [
        (region, out["BucketName"], n == 0) for n, (region, out) in enumerate(instances.items())
    ]
    for item in listed:  # the client reaches each bucket where presigned URLs would point
        s3 = boto3.client(
            "s3",
            endpoint_url=item["s3_endpoint"],
            region_name=item["region"],
            aws_access_key_id="test",
            aws_secret_access_key="test",
        )
        assert s3.head_bucket(Bucket=item["bucket"])["ResponseMetadata"]["HTTPStatusCode"] == 200
