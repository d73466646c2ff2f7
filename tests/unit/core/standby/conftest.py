"""A primary and its standby over moto and two temp dirs (their EFS): the replication tests' pair."""

from __future__ import annotations

import hashlib

import pytest

from hycloud_core.fs import FileSystem, Namespace
from hycloud_core.standby.apply import apply_ops
from hycloud_core.standby.records_copy import object_copier
from hycloud_core.standby.replicate import Standby
from hycloud_core.store.objects import Objects
from hycloud_core.store.records import Records
from tests.conftest import MOTO_BUCKET, make_stores

USER = "u-1"
STANDBY_BUCKET = "standby-content"
RETAIN_S = 30 * 86400  # the standby's apply function runs with the deployment's version retention


@pytest.fixture
def pair(moto_filesystems, tmp_path) -> tuple[FileSystem, FileSystem, Standby, str]:
    """(the primary's filesystem of USER, the standby's, the standby as the job reaches it, the
    primary's namespaces folder)."""
    make_stores(STANDBY_BUCKET, "standby-table")
    records = Records("standby-table")
    s3 = moto_filesystems.s3
    standby_ns = str(tmp_path / "standby" / "ns")  # its own EFS: trash and versions areas apart

    def standby_fs(user: str) -> FileSystem:
        objects = Objects(records.table, s3, STANDBY_BUCKET)
        fs = FileSystem(user, Namespace(standby_ns, user), records, objects, s3, STANDBY_BUCKET)
        fs.retain_s = RETAIN_S
        return fs

    records_table = moto_filesystems.records.table
    records_table.put_item(Item={"pk": f"USERID#{USER}", "sk": "ID", "name": "ann", "state": "active"})
    standby = Standby(
        records.table,
        lambda user, ops: apply_ops(standby_fs(user), ops),
        object_copier(s3, MOTO_BUCKET, s3, STANDBY_BUCKET),
    )
    primary = moto_filesystems.fs(USER)
    return primary, standby_fs(USER), standby, str(tmp_path / "ns")


def put(fs: FileSystem, path: str, data: bytes) -> None:
    fs.put_small(path, data, hashlib.sha256(data).hexdigest(), parents=True)
