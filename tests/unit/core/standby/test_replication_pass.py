"""The replication pass (moto): the standby's namespace, records and Merkle root follow the primary's,
a diverged user is left alone, a paused job does nothing, and the lag is reported."""

from __future__ import annotations

import hashlib
from pathlib import Path

import boto3
import pytest

from hycloud_core.fs import FileSystem, Namespace
from hycloud_core.merkle.remote_diff import differences
from hycloud_core.standby.replicate import run_pass
from hycloud_core.standby.status import ReplicationStatus
from hycloud_core.store.merkle_records import MerkleRecords
from tests.conftest import MOTO_BUCKET
from tests.unit.core.standby.conftest import USER, put


def roots(primary: FileSystem, standby: FileSystem) -> tuple[str, str]:
    return primary.merkle.root_item()["hash"], standby.merkle.root_item()["hash"]


def test_a_pass_copies_what_differs_and_nothing_more(pair):
    primary, standby_fs, standby, ns_dir = pair
    table = primary.records.table
    put(primary, "/a/one.txt", b"one")
    put(primary, "/a/b/two.txt", b"two")
    primary.mkdir("/empty")
    first = run_pass(table, ns_dir, standby)
    assert first["in_step"] and first["copied"] == 5  # /a, /a/b, their 2 files, /empty
    assert standby_fs.ns.read("/a/b/two.txt") == b"two"
    assert roots(primary, standby_fs)[0] == roots(primary, standby_fs)[1]
    assert (
        boto3.resource("dynamodb")
        .Table("standby-table")
        .get_item(Key={"pk": f"USERID#{USER}", "sk": "ID"})["Item"]["name"]
        == "ann"
    )

    put(primary, "/a/one.txt", b"changed")
    primary.rmdir("/a/b", recursive=True)
    second = run_pass(table, ns_dir, standby)
    assert second["copied"] == 2  # the changed file and the removal, found by the exchange
    assert standby_fs.ns.read("/a/one.txt") == b"changed" and not standby_fs.ns.exists("/a/b")
    assert len(set(roots(primary, standby_fs))) == 1
    assert run_pass(table, ns_dir, standby)["copied"] == 0


def test_a_diverged_user_is_left_alone_until_cleared(pair):
    primary, standby_fs, standby, ns_dir = pair
    put(primary, "/x.txt", b"primary")
    ReplicationStatus(standby.table).mark_diverged(USER)
    put(standby_fs, "/written-on-standby.txt", b"standby")
    result = run_pass(primary.records.table, ns_dir, standby)
    assert result["diverged"] == 1
    assert standby_fs.ns.exists("/written-on-standby.txt") and not standby_fs.ns.exists("/x.txt")
    ReplicationStatus(standby.table).clear_diverged(USER)
    assert run_pass(primary.records.table, ns_dir, standby)["in_step"]
    assert len(set(roots(primary, standby_fs))) == 1


def test_paused_does_nothing_and_the_lag_grows(pair):
    primary, standby_fs, standby, ns_dir = pair
    status = ReplicationStatus(primary.records.table)
    run_pass(primary.records.table, ns_dir, standby)
    in_step = status.report("primary")["in_step_at"]
    status.set_paused(True)
    put(primary, "/late.txt", b"late")
    assert run_pass(primary.records.table, ns_dir, standby) == {"paused": True}
    report = status.report("primary", now=in_step + 42)
    assert report["paused"] and report["lag_s"] == pytest.approx(42, abs=0.01)
    assert not standby_fs.ns.exists("/late.txt")


def test_large_file_content_and_record_follow_the_link(pair, moto_filesystems):
    primary, standby_fs, standby, ns_dir = pair
    s3 = moto_filesystems.s3
    data = b"L" * 5000
    digest = hashlib.sha256(data).hexdigest()
    key = f"objects/{digest}"
    s3.put_object(Bucket=MOTO_BUCKET, Key=key, Body=data)
    primary.records.table.put_item(Item={"pk": f"OBJ#{digest}", "sk": "OBJ", "state": "live", "s3_key": key})
    run_pass(primary.records.table, ns_dir, standby)
    assert s3.get_object(Bucket="standby-content", Key=key)["Body"].read() == data


def test_differences_report_the_topmost_node_only(pair):
    primary, standby_fs, _, _ = pair
    for i in range(3):
        put(primary, f"/deep/x/y{i}.txt", b"%d" % i)
    found = differences(primary.merkle.answer, standby_fs.merkle.answer)
    assert [(d.path, d.source["kind"], d.target) for d in found] == [("/deep", "dir", None)]
    assert MerkleRecords(standby_fs.records.table, USER).root_item()["kind"] == "dir"


def test_a_pass_over_some_users_leaves_the_others_and_moves_only_their_lag(pair, moto_filesystems):
    primary, standby_fs, standby, ns_dir = pair
    table = primary.records.table
    table.put_item(Item={"pk": "USERID#u-2", "sk": "ID", "name": "bo", "state": "active"})
    put(primary, "/mine.txt", b"1")
    put(moto_filesystems.fs("u-2"), "/theirs.txt", b"2")
    result = run_pass(table, ns_dir, standby, users=[USER])
    assert result["in_step"] and result["copied"] == 1
    assert standby_fs.ns.exists("/mine.txt")
    assert not (Path(standby_fs.ns.root).parent / "u-2" / "theirs.txt").exists()
    status = ReplicationStatus(table)
    assert status.report("primary")["in_step_at"] is None  # no full pass yet
    assert status.report("primary", user=USER)["in_step_at"] == pytest.approx(result["started"], abs=0.01)


def test_a_pass_out_of_time_continues_where_it_stopped_and_keeps_its_start(pair, moto_filesystems):
    from hycloud_core.standby.replicate import Budget

    primary, standby_fs, standby, ns_dir = pair
    table = primary.records.table
    other = moto_filesystems.fs("u-2")
    put(primary, "/a.txt", b"first user")
    put(other, "/b.txt", b"second user")
    spent = Budget(stop_at=0.0)  # every invocation out of time after its first user
    first = run_pass(table, ns_dir, standby, budget=spent)
    assert not first["complete"] and first["users_done"] == 1 and first["after"] == USER
    assert ReplicationStatus(table).report("primary")["lag_s"] is None  # not complete: never in step yet
    second = run_pass(table, ns_dir, standby, budget=spent)
    assert second["complete"] and second["in_step"] and second["resumed_after"] == USER
    assert second["users_done"] == 1 and second["copied"] == 2  # both users' files, counted over the pass
    assert second["started"] == first["started"]  # in step as of the pass's start
    assert ReplicationStatus(table).read()["in_step_at"] == pytest.approx(first["started"], abs=0.01)
    assert Namespace(str(Path(standby_fs.ns.root).parent), "u-2").read("/b.txt") == b"second user"


def test_applied_ops_count_nothing_on_the_standbys_quota(pair):
    """The standby's usage is the primary's, copied as a record (records_copy.py, the stream):
    the ops a pass applies count none of their own on top of it, in either direction."""
    primary, standby_fs, standby, ns_dir = pair
    table = primary.records.table
    put(primary, "/q/one.txt", b"one")
    put(primary, "/q/two.txt", b"two")
    run_pass(table, ns_dir, standby, backfill=True)
    assert standby_fs.quota.report()["files"] == primary.quota.report()["files"]
    primary.delete("/q/one.txt")
    put(primary, "/q/three.txt", b"three")
    assert run_pass(table, ns_dir, standby, backfill=True)["in_step"]
    assert not standby_fs.ns.exists("/q/one.txt") and standby_fs.ns.read("/q/three.txt") == b"three"
    assert standby_fs.quota.report()["files"] == primary.quota.report()["files"]
