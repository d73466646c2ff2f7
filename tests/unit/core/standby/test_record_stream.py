"""The record stream (moto): stream records land on the standby's table in order, an object's
content before its record, deletions too; a failure stops the batch at that record; a diverged
user's usage stays the standby's; the lag of a batch is recorded."""

from __future__ import annotations

import boto3
import pytest
from boto3.dynamodb.types import TypeSerializer

from hycloud_core.standby.record_stream import STREAMED, apply_batch, record_batch, stream_filter
from hycloud_core.standby.records_copy import object_copier
from hycloud_core.standby.status import ReplicationStatus
from tests.conftest import MOTO_BUCKET, make_stores

_ser = TypeSerializer()


def _image(item: dict) -> dict:
    return {k: _ser.serialize(v) for k, v in item.items()}


def record(event: str, item: dict, seq: int, at: float = 1000.0) -> dict:
    change = {
        "Keys": _image({"pk": item["pk"], "sk": item["sk"]}),
        "SequenceNumber": str(seq),
        "ApproximateCreationDateTime": at,
    }
    if event != "REMOVE":
        change["NewImage"] = _image(item)
    return {"eventName": event, "dynamodb": change}


@pytest.fixture
def standby(moto_filesystems):
    make_stores("standby-content", "standby-table")
    s3 = moto_filesystems.s3
    return boto3.resource("dynamodb").Table("standby-table"), s3


def test_changes_land_in_order_objects_after_their_content_and_deletes_propagate(standby):
    table, s3 = standby
    s3.put_object(Bucket=MOTO_BUCKET, Key="objects/abc", Body=b"large content")
    key = {"pk": "KEY#k1", "sk": "KEY", "user": "ann"}
    batch = [
        record("INSERT", {**key, "state": "active"}, 1),
        record("MODIFY", {**key, "state": "revoked"}, 2),
        record("INSERT", {"pk": "OBJ#abc", "sk": "OBJ", "state": "live", "s3_key": "objects/abc"}, 3),
        record("INSERT", {"pk": "USER#ann", "sk": "PROFILE", "id": "u-1"}, 4),
        record("REMOVE", {"pk": "USER#ann", "sk": "PROFILE"}, 5),
    ]
    done = apply_batch(batch, table, object_copier(s3, MOTO_BUCKET, s3, "standby-content"), set())
    assert (done.written, done.deleted, done.objects, done.failed_at) == (4, 1, 1, None)
    assert table.get_item(Key={"pk": "KEY#k1", "sk": "KEY"})["Item"]["state"] == "revoked"
    assert "Item" not in table.get_item(Key={"pk": "USER#ann", "sk": "PROFILE"})
    assert s3.get_object(Bucket="standby-content", Key="objects/abc")["Body"].read() == b"large content"


def test_a_failure_stops_the_batch_at_that_record(standby):
    table, s3 = standby

    def broken(key: str) -> None:
        raise RuntimeError("standby bucket unreachable")

    batch = [
        record("INSERT", {"pk": "KEY#k1", "sk": "KEY"}, 1),
        record("INSERT", {"pk": "OBJ#x", "sk": "OBJ", "state": "live", "s3_key": "objects/x"}, 2),
        record("INSERT", {"pk": "KEY#k2", "sk": "KEY"}, 3),
    ]
    done = apply_batch(batch, table, broken, set())
    assert done.failed_at == "2" and done.written == 2  # retried from the object on
    assert "Item" not in table.get_item(Key={"pk": "OBJ#x", "sk": "OBJ"})  # no record without content
    assert "Item" in table.get_item(Key={"pk": "KEY#k2", "sk": "KEY"})  # access records first


def test_a_revocation_is_not_held_behind_a_failing_object_and_a_failing_key_stops_all(standby):
    table, s3 = standby
    table.put_item(Item={"pk": "KEY#k1", "sk": "KEY", "user": "ann"})

    def broken(key: str) -> None:
        raise RuntimeError("standby bucket unreachable")

    batch = [
        record("INSERT", {"pk": "OBJ#x", "sk": "OBJ", "state": "live", "s3_key": "objects/x"}, 1),
        record("REMOVE", {"pk": "KEY#k1", "sk": "KEY"}, 2),
    ]
    done = apply_batch(batch, table, broken, set())
    assert done.failed_at == "1" and done.deleted == 1
    assert "Item" not in table.get_item(Key={"pk": "KEY#k1", "sk": "KEY"})  # revoked there already

    class Refusing:
        def put_item(self, Item):
            raise RuntimeError("throttled")

    copied: list[str] = []
    batch = [
        record("INSERT", {"pk": "OBJ#y", "sk": "OBJ", "state": "live", "s3_key": "objects/y"}, 3),
        record("INSERT", {"pk": "KEY#k2", "sk": "KEY"}, 4),
    ]
    done = apply_batch(batch, Refusing(), copied.append, set())
    assert done.failed_at == "3" and copied == []  # nothing after a failed access record


def test_an_object_whose_content_the_primary_lost_is_skipped_not_retried(standby):
    table, s3 = standby
    batch = [
        record("INSERT", {"pk": "OBJ#gone", "sk": "OBJ", "state": "live", "s3_key": "objects/gone"}, 1),
        record("REMOVE", {"pk": "KEY#k9", "sk": "KEY"}, 2),
    ]
    done = apply_batch(batch, table, object_copier(s3, MOTO_BUCKET, s3, "standby-content"), set())
    assert done.failed_at is None and done.skipped == 1 and done.deleted == 1
    assert "Item" not in table.get_item(Key={"pk": "OBJ#gone", "sk": "OBJ"})


def test_a_diverged_users_usage_stays_the_standbys_and_the_lag_is_recorded(standby):
    table, s3 = standby
    ReplicationStatus(table).mark_diverged("u-1")
    batch = [
        record("MODIFY", {"pk": "USAGE#u-1", "sk": "USAGE", "bytes": 5}, 1, at=100.0),
        record("MODIFY", {"pk": "USAGE#u-2", "sk": "USAGE", "bytes": 7}, 2, at=101.0),
    ]
    done = apply_batch(batch, table, lambda key: None, ReplicationStatus(table).diverged())
    assert (done.skipped, done.written) == (1, 1)
    assert "Item" not in table.get_item(Key={"pk": "USAGE#u-1", "sk": "USAGE"})
    record_batch([table], done, now=103.5)
    report = ReplicationStatus(table).report("standby", now=110)
    assert report["records_lag_s"] == pytest.approx(3.5) and report["records_applied_at"] == 103.5


def test_the_mapping_filter_names_every_streamed_kind_and_nothing_else():
    prefixes = [p["prefix"] for p in stream_filter()["dynamodb"]["Keys"]["pk"]["S"]]
    assert set(prefixes) == set(STREAMED) and not any(p.startswith(("NS#", "MK#", "REPL#")) for p in prefixes)
