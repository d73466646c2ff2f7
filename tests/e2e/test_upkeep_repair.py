"""Upkeep after a crash: records agree with EFS again, stale temporary files and orphan objects go,
and nothing an operation still needs is touched while it is within the grace period."""

from __future__ import annotations

import hashlib
import os
import time

import pytest

from hycloud_core import content
from tests.e2e.invariants import file_records, record_key, records_disagreeing, temporary_files

pytestmark = [pytest.mark.e2e, pytest.mark.exclusive]


def test_upkeep_repairs_records_and_removes_stale_leftovers(deployment, dave):
    sdk, ddb, table = dave.sdk(), deployment.client("dynamodb"), deployment.outputs["TableName"]
    sdk.mkdir("/r")
    sdk.put_bytes("/r/kept.txt", b"kept")
    key = lambda path: record_key(deployment, dave.ns_key, path)  # noqa: E731
    ddb.delete_item(TableName=table, Key=key("/r/kept.txt"))  # crash after EFS, before the record
    ddb.put_item(TableName=table, Item={**key("/r/ghost.txt"), "kind": {"S": "small"}, "size": {"N": "3"}})
    fresh, stale = dave.ns_dir() / "r" / ".hc-tmp-fresh", dave.ns_dir() / "r" / ".hc-tmp-stale"
    fresh.write_bytes(b"in flight")
    stale.write_bytes(b"crashed")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    assert sorted(records_disagreeing(deployment, dave.ns_key, dave.ns_dir())) == [
        "/r/ghost.txt",
        "/r/kept.txt",
    ]

    result = deployment.upkeep()  # the deployment's own grace period (1 h)
    assert "/r/kept.txt" in result["records_written"] and "/r/ghost.txt" in result["records_removed"]
    assert records_disagreeing(deployment, dave.ns_key, dave.ns_dir()) == []
    assert (
        file_records(deployment, dave.ns_key)["/r/kept.txt"]["sha256"] == hashlib.sha256(b"kept").hexdigest()
    )
    assert temporary_files(dave.ns_dir()) == [".hc-tmp-fresh"]  # may belong to a running write
    assert sdk.get_bytes("/r/kept.txt") == b"kept"


def test_upkeep_deletes_objects_no_record_names_only_after_the_grace(deployment):
    s3, bucket = deployment.client("s3"), deployment.outputs["BucketName"]
    orphan = hashlib.sha256(os.urandom(16)).hexdigest()
    s3.put_object(Bucket=bucket, Key=content.object_key(orphan), Body=b"stored, never recorded")
    collect = {"walk": False, "trash": {"users": [], "collect": True}}  # the collection round alone
    assert orphan not in deployment.upkeep(**collect)["collected"]["orphans_deleted"]  # may be in flight
    assert "collected" not in deployment.upkeep(grace_s=0, walk=False)  # the 5-minute round: no walk
    assert s3.list_objects_v2(Bucket=bucket, Prefix=content.object_key(orphan))["KeyCount"] == 1
    assert orphan in deployment.upkeep(grace_s=0, **collect)["collected"]["orphans_deleted"]
    assert s3.list_objects_v2(Bucket=bucket, Prefix=content.object_key(orphan))["KeyCount"] == 0
