"""Purging a deleted user's leftovers under moto: only tombstones older than the grace period."""

from __future__ import annotations

import time

import boto3
import pytest
from moto import mock_aws

from hycloud_core import content
from hycloud_core.fs.user_purge import purge_deleted_users
from tests.conftest import make_stores

HASH = "ab" * 32


@pytest.fixture
def stores(monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        s3 = make_stores("content", "table")
        yield boto3.resource("dynamodb").Table("table"), s3, tmp_path


def _leave(table, s3, root, uid: str, deleted_at: float | None) -> str:
    (root / uid / "empty").mkdir(parents=True)
    upload = s3.create_multipart_upload(Bucket="content", Key=content.object_key(HASH))["UploadId"]
    table.put_item(Item={"pk": f"UPLOAD#{uid}", "sk": HASH, "upload_id": upload})
    table.put_item(Item={"pk": f"USAGE#{uid}", "sk": "USAGE", "bytes": 0, "files": 0})
    if deleted_at is not None:
        table.put_item(
            Item={"pk": f"USERID#{uid}", "sk": "ID", "state": "deleted", "deleted": int(deleted_at)}
        )
    return upload


def test_only_users_deleted_before_the_grace_period_are_purged(stores):
    table, s3, root = stores
    old = _leave(table, s3, root, "u-old", time.time() - 7200)
    _leave(table, s3, root, "u-recent", time.time())
    _leave(table, s3, root, "u-live", None)

    assert purge_deleted_users(table, s3, "content", str(root), grace_s=3600) == ["u-old"]

    assert sorted(p.name for p in root.iterdir()) == ["u-live", "u-recent"]
    assert (
        table.query(KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": "UPLOAD#u-old"})[
            "Items"
        ]
        == []
    )
    assert table.get_item(Key={"pk": "USAGE#u-recent", "sk": "USAGE"}).get("Item")
    left = [u["UploadId"] for u in s3.list_multipart_uploads(Bucket="content").get("Uploads", [])]
    assert old not in left and len(left) == 2
    assert table.get_item(Key={"pk": "USERID#u-old", "sk": "ID"})["Item"]["state"] == "deleted"


def test_a_purged_user_s_access_meter_goes_with_them(stores):
    from hycloud_core.cost import access_meter

    table, s3, root = stores
    _leave(table, s3, root, "u-old", time.time() - 7200)
    _leave(table, s3, root, "u-live", None)
    for uid in ("u-old", "u-live"):
        access_meter.record(table, uid, reads=[10], writes=[10])
    assert purge_deleted_users(table, s3, "content", str(root), grace_s=3600) == ["u-old"]
    assert access_meter.read_meter(table, "u-old").since is None
    assert access_meter.read_meter(table, "u-live").reads == {12: 1}
