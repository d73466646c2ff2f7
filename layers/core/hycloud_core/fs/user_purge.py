"""Clearing what a deleted user left: its namespace folder and the records of unfinished work.

`delete-user` (store/users.py) runs where only the table is reachable and refuses while the
namespace holds files, so it leaves empty folders, temporary files, pending uploads (with their
S3 multipart uploads), leases, job ledger records, the usage counter, kept versions, its trash, its
snapshots and its access meter (cost/access_meter.py). The tombstone
`USERID#<id>` says the id is never used again; once it is older than the grace period no request
of that user can still be in flight, so upkeep removes all of it. Content those records named is
then unmarked and goes with the collector.
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Any

from boto3.dynamodb.conditions import Key

from .. import content
from ..store.pages import query_all
from . import snapshots, trash
from .version_copies import VersionCopies

PARTITIONS = ("NS", "MK", "UPLOAD", "LOCK", "JOB", "USAGE", "SHARES", "VER", "TRASH", "SNAP", "METER")


def purge_deleted_users(table: Any, s3: Any, bucket: str, namespaces_dir: str, grace_s: float) -> list[str]:
    """Remove the leftovers of every user deleted more than `grace_s` ago; returns their ids."""
    if not os.path.isdir(namespaces_dir):
        return []
    purged = []
    for uid in sorted(os.listdir(namespaces_dir)):
        tombstone = table.get_item(Key={"pk": f"USERID#{uid}", "sk": "ID"}, ConsistentRead=True).get("Item")
        if not tombstone or tombstone.get("state") != "deleted":
            continue
        if time.time() - float(tombstone.get("deleted", 0)) < grace_s:
            continue
        _abort_uploads(table, s3, bucket, uid)
        for prefix in PARTITIONS:
            _drop_partition(table, f"{prefix}#{uid}")
        shutil.rmtree(os.path.join(namespaces_dir, uid), ignore_errors=True)
        VersionCopies(namespaces_dir, uid).remove_all()
        trash.remove_all(namespaces_dir, uid)
        snapshots.remove_all(namespaces_dir, uid)
        purged.append(uid)
    return purged


def _items(table: Any, pk: str) -> list[dict[str, Any]]:
    return query_all(table, Key("pk").eq(pk), consistent=True)


def _abort_uploads(table: Any, s3: Any, bucket: str, uid: str) -> None:
    for pending in _items(table, f"UPLOAD#{uid}"):
        if "upload_id" not in pending:
            continue
        try:
            s3.abort_multipart_upload(
                Bucket=bucket, Key=content.object_key(pending["sk"]), UploadId=pending["upload_id"]
            )
        except s3.exceptions.ClientError as err:
            if err.response.get("Error", {}).get("Code") != "NoSuchUpload":
                raise


def _drop_partition(table: Any, pk: str) -> None:
    with table.batch_writer() as batch:
        for item in _items(table, pk):
            batch.delete_item(Key={"pk": item["pk"], "sk": item["sk"]})
