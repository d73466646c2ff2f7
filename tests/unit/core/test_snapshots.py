"""Snapshots over EFS (a temp dir), S3 and DynamoDB (moto): `create` copies a folder's tree into
the snapshot area (large files as links, no data), later writes leave it unchanged, a restore
brings it back byte for byte (409 on a taken place, `replace` trashes what is there first), and
the collector keeps the content a snapshot's links name after the original is deleted and
purged, then reclaims it once the snapshot is removed."""

from __future__ import annotations

import contextlib
import hashlib
import os
import time

import pytest

import hycloud_core.fs.snapshot_copy as snapshot_copy
import hycloud_core.fs.snapshots as snapshots
import hycloud_core.store.locks as locks
from hycloud_core.errors import BadRequestError, ConflictError, NotFoundError, PayloadTooLargeError
from hycloud_core.fs import FileSystem
from hycloud_core.fs.merkle_scan import repair
from hycloud_core.fs.snapshots import Snapshots
from hycloud_core.fs.trash import purge_trash
from hycloud_core.fs.tree_job import Budget, TreeJobStep
from hycloud_core.store.locks import leased_paths, path_leases
from hycloud_core.store.quotas import Quota
from hycloud_core.store.snapshot_marks import CopyMarks
from hycloud_core.store.tree_jobs import (
    APPLY,
    RESTORE,
    RUNNING,
    SNAPSHOT,
    SUCCEEDED,
    TreeJob,
    TreeJobs,
    job_id,
)
from tests.unit.core.moto_content import put_large, stored
from tests.unit.core.moto_content import put_small as put
from tests.unit.core.moto_content import sample_tree as tree

DAY = 86400


@pytest.fixture(autouse=True)
def _copied_within_the_request(monkeypatch):
    """These trees are copied within `create` (ready at once), however loaded the machine."""
    monkeypatch.setattr(snapshots, "INLINE_S", 30.0)


@pytest.fixture
def bob(moto_filesystems) -> FileSystem:
    return moto_filesystems.fs("bob")


class _Reader:
    """A snapshot's tree where `digests` looks for a FileSystem's namespace."""

    def __init__(self, fs: FileSystem, tree_: object) -> None:
        self.ns = tree_


def digests(fs: FileSystem, root: str) -> dict[str, str]:
    """Each file below `root` (relative) by the sha256 of its bytes, or its content hash if large."""
    out = {}
    for e in fs.ns.walk_files(root):
        rel = e.path if root == "/" else e.path[len(root) :]
        out[rel] = e.content_hash if e.storage == "large" else hashlib.sha256(fs.ns.read(e.path)).hexdigest()
    return out


def test_create_copies_the_tree_and_later_writes_leave_it_unchanged(bob):
    h = tree(bob)
    before = digests(bob, "/p")
    snap = Snapshots(bob).create("/p", "one")
    assert (snap.name, snap.path, snap.files, snap.bytes, snap.state) == (
        "one",
        "/p",
        3,
        5 + 4 + 5000,
        "ready",
    )
    put(bob, "/p/a.txt", b"changed")
    bob.delete("/p/sub/b.txt")
    put_large(bob, "/p/sub/big.bin", b"M" * 6000)
    snaps = Snapshots(bob)
    names = [e.name for e in snaps.browse("one", "/")[0]]
    assert names == ["a.txt", "empty", "sub"]
    assert snaps.tree("one")[1].read("/a.txt") == b"alpha"
    assert snaps.stat("one", "/sub/big.bin").content_hash == h
    restored, _ = snaps.restore("one", to="/back")
    assert restored.path == "/back" and digests(bob, "/back") == before
    assert bob.ns.exists("/back/empty")
    assert sorted(r["path"] for r in bob.records.files_under("bob", "/back")) == [
        "/back/a.txt",
        "/back/sub/b.txt",
        "/back/sub/big.bin",
    ]
    assert repair(bob.ns, bob.merkle, lambda _path: contextlib.nullcontext()) == []  # nodes agree with EFS


def test_a_snapshot_is_outside_the_namespace_and_its_large_files_are_links(moto_filesystems, bob):
    tree(bob)
    snap = Snapshots(bob).create("/p", "s")
    area = moto_filesystems.root / "snapshots" / "bob" / snap.id
    assert sorted(os.listdir(area)) == ["a.txt", "empty", "sub"]
    assert os.path.getsize(area / "sub" / "big.bin") < 1000  # a link file, not the 5000 bytes
    assert sorted(e.path for e in bob.ns.walk_files("/")) == ["/p/a.txt", "/p/sub/b.txt", "/p/sub/big.bin"]


def test_restore_to_the_original_place_is_409_unless_replace_which_trashes_what_is_there(bob):
    tree(bob)
    before = digests(bob, "/p")
    Snapshots(bob).create("/p", "s")
    put(bob, "/p/a.txt", b"new")
    with pytest.raises(ConflictError) as err:
        Snapshots(bob).restore("s")
    assert err.value.code == "already-exists" and bob.ns.read("/p/a.txt") == b"new"
    entry, _ = Snapshots(bob).restore("s", replace=True)
    assert entry.path == "/p" and digests(bob, "/p") == before
    trashed = bob.trash.listing()
    assert [i.path for i in trashed] == ["/p"]  # what was there is kept, restorable
    assert Quota(bob.records, "bob").recount().files == 3


def test_restore_of_one_file_or_subfolder(bob):
    tree(bob)
    Snapshots(bob).create("/p", "s")
    bob.delete("/p/sub/b.txt")
    entry, _ = Snapshots(bob).restore("s", "/sub/b.txt")
    assert entry.path == "/p/sub/b.txt" and bob.ns.read("/p/sub/b.txt") == b"beta"
    Snapshots(bob).restore("s", "/sub", to="/elsewhere/sub")
    assert sorted(digests(bob, "/elsewhere/sub")) == ["/b.txt", "/big.bin"]


def test_the_collector_keeps_content_a_snapshot_names_after_the_original_is_deleted_and_purged(
    moto_filesystems, bob
):
    m = moto_filesystems
    h = tree(bob)
    Snapshots(bob).create("/p", "keep")
    bob.trash_tree("/p")
    ns = str(m.root / "ns")
    assert len(purge_trash(m.records.table, ns, default_s=0, now=time.time() + DAY).items) == 1
    m.objects.release(h, time.time())
    assert m.collect().reclaimed == [] and stored(bob, h)  # only the snapshot's link names it
    entry, _ = Snapshots(bob).restore("keep")
    assert bob.ns.read_link("/p/sub/big.bin").content_hash == h and entry.path == "/p"
    bob.trash_tree("/p")
    purge_trash(m.records.table, ns, default_s=0, now=time.time() + DAY)
    Snapshots(bob).remove("keep")
    m.objects.release(h, time.time())
    assert m.collect().reclaimed == [h] and not stored(bob, h)


def test_names_are_checked_unique_and_unknown_ones_404(bob):
    tree(bob)
    snaps = Snapshots(bob)
    with pytest.raises(BadRequestError):
        snaps.create("/p", "../x")
    snaps.create("/p", "s")
    with pytest.raises(ConflictError) as err:
        snaps.create("/p", "s")
    assert err.value.code == "already-exists"
    with pytest.raises(NotFoundError):
        snaps.restore("nope")
    with pytest.raises(NotFoundError):
        snaps.create("/missing", "m")
    assert [s.name for s in snaps.listing()] == ["s"]
    snaps.remove("s")
    assert snaps.listing() == [] and not os.listdir(snaps.area.root)
    with pytest.raises(NotFoundError):
        snaps.remove("s")


def _wide(fs: FileSystem) -> dict[str, str]:
    """/p with folders at three depths, small and large files; its digests."""
    for d in range(3):
        put(fs, f"/p/d{d}/top.txt", f"top {d}".encode())
        for e in range(2):
            put(fs, f"/p/d{d}/e{e}/f.txt", f"{d}-{e}".encode())
    put_large(fs, "/p/d1/big.bin", b"B" * 6000)
    fs.mkdir("/p/d2/e1/empty")
    return digests(fs, "/p")


def _make(fs: FileSystem, name: str, folders_a_step: int = 1) -> int:
    """Run a snapshot's job to its end, `folders_a_step` folders a step; the steps it took."""
    jobs = TreeJobs(fs.records.table)
    snap = Snapshots(fs).get(name)
    job = TreeJob(fs.user, job_id(SNAPSHOT, snap.path, snap.id), SNAPSHOT, snap.path, name, leases=[])
    job.phase = APPLY
    assert jobs.create(job)
    steps = 0
    while job.state == RUNNING:
        job = jobs.get(fs.user, job.id)
        TreeJobStep(fs, jobs, job, Budget.of(60, folders_a_step)).run()
        steps += 1
    assert job.state == SUCCEEDED, job.error
    return steps


def test_create_answers_at_once_and_writes_while_the_job_copies_leave_the_snapshot_as_it_was(bob):
    before = _wide(bob)
    snap = Snapshots(bob).create("/p", "s", inline_s=0)  # nothing copied but the first folder
    assert snap.state == "making"
    put(bob, "/p/d0/top.txt", b"overwritten")  # a file in a folder not copied yet
    bob.delete("/p/d1/e0/f.txt")  # deep: every folder above it is copied first
    bob.mkdir("/p/d1/e0/new")
    put(bob, "/p/d1/e0/new/n.txt", b"came since")
    bob.move("/p/d2", "/p/moved")  # a folder leaving: its whole tree first
    put(bob, "/p/moved/e0/f.txt", b"changed after it moved")
    bob.trash_tree("/p/d1/e1")  # rm -r: the same
    put(bob, "/p/d2/top.txt", b"a new d2 where the old one was")
    put_large(bob, "/p/d1/big.bin", b"N" * 7000)
    assert _make(bob, "s") > 3
    snaps = Snapshots(bob)
    made = snaps.get("s")
    assert made.state == "ready" and (made.files, made.bytes) == (
        10,
        sum(len(f"top {d}") for d in range(3)) + 6 * 3 + 6000,
    )
    tree_ = snaps.tree("s")[1]
    assert digests(_Reader(bob, tree_), "/") == before  # type: ignore[arg-type]
    assert tree_.stat("/d2/e1/empty").type == "dir" and not tree_.exists("/d1/e0/new")
    assert not list(CopyMarks(bob.records.table, "bob", made.id).all())  # its marks are gone
    assert not [p for p in leased_paths(bob.records.table, "bob")]  # and its lease


def test_a_snapshot_being_made_is_browsed_and_read_as_it_was_at_once(bob):
    before = _wide(bob)
    Snapshots(bob).create("/p", "s", inline_s=0)
    snaps = Snapshots(bob)
    assert [e.name for e in snaps.browse("s", "/")[0]] == ["d0", "d1", "d2"]  # read live: not copied yet
    assert [e.path for e in snaps.browse("s", "/d1")[0]] == ["/d1/big.bin", "/d1/e0", "/d1/e1", "/d1/top.txt"]
    put(bob, "/p/d1/top.txt", b"changed")  # copies "/" and /d1 first
    bob.move("/p/d2", "/p/moved")
    bob.mkdir("/p/new")
    assert snaps.get("s").state == "making"
    for rel in ("/d1/top.txt", "/d1/e0/f.txt", "/d2/e0/f.txt", "/d0/top.txt"):
        _snap, data = snaps.read("s", rel, lambda ns, at: ns.read(at))
        assert hashlib.sha256(data).hexdigest() == before[rel], rel
    assert snaps.stat("s", "/d1/big.bin").content_hash == bob.ns.stat("/p/d1/big.bin").content_hash
    assert snaps.stat("s", "/d2/e1/empty").type == "dir"
    assert [e.name for e in snaps.browse("s", "/")[0]] == ["d0", "d1", "d2"]
    for gone in ("/moved", "/new"):
        with pytest.raises(NotFoundError):
            snaps.browse("s", gone)


def test_a_read_of_a_folder_copied_and_changed_while_it_was_read_is_read_again_from_the_copy(bob):
    _wide(bob)
    Snapshots(bob).create("/p", "s", inline_s=0)
    raced = []

    def read_while_a_write_lands(ns, at):
        if ns is bob.ns and not raced:  # the live folder: a write copies it, then changes it
            raced.append(at)
            put(bob, "/p/d0/top.txt", b"written during the read")
        return ns.read(at)

    _snap, data = Snapshots(bob).read("s", "/d0/top.txt", read_while_a_write_lands)
    assert raced == ["/p/d0/top.txt"] and data == b"top 0"


def test_moving_or_removing_the_folder_of_a_snapshot_being_made_waits_for_it(bob, monkeypatch):
    monkeypatch.setattr(locks, "WAIT_S", 0.2)
    _wide(bob)
    Snapshots(bob).create("/p", "s", inline_s=0)
    for change in (lambda: bob.move("/p", "/q"), lambda: bob.trash_tree("/p")):
        with pytest.raises(ConflictError) as err:
            with path_leases(bob.records.table, "bob", ["/p"], wait_s=0.2, on_snapshot=bob.before_snapshot):
                change()
        assert err.value.code == "busy"
    with pytest.raises(ConflictError) as err:  # nor a second snapshot of it, while it is made
        Snapshots(bob).create("/p", "again")
    assert err.value.code == "busy" and [s.name for s in Snapshots(bob).listing()] == ["s"]
    _make(bob, "s", 100)
    bob.move("/p", "/q")
    assert Snapshots(bob).tree("s")[1].read("/d0/top.txt") == b"top 0"


def test_a_snapshot_whose_lease_lapsed_is_removed_and_its_job_says_why(bob):
    _wide(bob)
    snap = Snapshots(bob).create("/p", "s", inline_s=0)
    bob.records.table.update_item(
        Key={"pk": "LOCK#bob", "sk": "/p"},
        UpdateExpression="SET expires = :e",
        ExpressionAttributeValues={":e": 1},
    )
    with pytest.raises(ConflictError) as err:
        Snapshots(bob).making("s")
    assert err.value.code == "snapshot-interrupted"
    assert Snapshots(bob).listing() == [] and not os.path.exists(Snapshots(bob).area.folder(snap.id))


def test_upkeep_removes_a_snapshot_left_making_once_its_lease_lapsed(bob):
    _wide(bob)
    left = Snapshots(bob).create("/p", "left", inline_s=0)
    namespaces = os.path.dirname(bob.ns.root)
    assert snapshots.abandon_stale(bob.records.table, namespaces, now=time.time() + 60) == []  # held
    later = time.time() + snapshots.LEASE_S + 60
    assert snapshots.abandon_stale(bob.records.table, namespaces, now=later) == ["bob/left"]
    assert Snapshots(bob).listing() == [] and not os.path.exists(Snapshots(bob).area.folder(left.id))
    assert not list(CopyMarks(bob.records.table, "bob", left.id).all())


def test_a_write_into_a_folder_too_large_to_copy_in_time_is_busy_and_the_job_copies_it(bob, monkeypatch):
    _wide(bob)
    for i in range(30):
        put(bob, f"/p/d0/many{i:02d}.txt", b"x")
    Snapshots(bob).create("/p", "s", inline_s=0)
    monkeypatch.setattr(snapshot_copy, "COPY_S", 0.0)
    monkeypatch.setattr(snapshot_copy, "PAGE", 5)
    with pytest.raises(ConflictError) as err:
        put(bob, "/p/d0/top.txt", b"changed")
    assert err.value.code == "busy" and bob.ns.read("/p/d0/top.txt") == b"top 0"
    monkeypatch.setattr(snapshot_copy, "COPY_S", 8.0)
    _make(bob, "s", 100)
    put(bob, "/p/d0/top.txt", b"changed")
    assert Snapshots(bob).tree("s")[1].read("/d0/top.txt") == b"top 0"
    assert len(Snapshots(bob).tree("s")[1].names("/d0")) == 33


def test_snapshots_count_against_the_quota_at_create_and_a_refused_one_leaves_nothing(bob):
    tree(bob)
    quota = Quota(bob.records, "bob")
    quota.set_limits(max_files=7)
    Snapshots(bob).create("/p", "first")  # 3 in use + 3 in it: 6
    with pytest.raises(Exception) as err:
        Snapshots(bob).create("/p", "second")  # 9 > 7
    assert getattr(err.value, "code", "") == "quota-exceeded"
    assert [s.name for s in Snapshots(bob).listing()] == ["first"]
    assert len(os.listdir(Snapshots(bob).area.root)) == 1
    assert Snapshots(bob).records.totals() == {"bytes": 5009, "files": 3, "snapshots": 1}


def test_a_packed_small_file_is_copied_as_its_bytes(bob, monkeypatch):
    put(bob, "/p/a.txt", b"alpha")
    real = bob.ns.read
    monkeypatch.setattr(bob.ns, "read", lambda path: b"from-segment" if path == "/p/a.txt" else real(path))
    snap = Snapshots(bob).create("/p", "s")
    assert Snapshots(bob).tree("s")[1].read("/a.txt") == b"from-segment" and snap.files == 1


def test_a_restore_above_its_limit_is_refused_and_its_subfolders_restore_one_by_one(bob, monkeypatch):
    tree(bob)
    Snapshots(bob).create("/p", "s")
    monkeypatch.setattr(snapshots, "RESTORE_MAX_ENTRIES", 3)  # /p holds 6 entries, /sub 3
    with pytest.raises(PayloadTooLargeError) as err:
        Snapshots(bob).restore("s", to="/back")
    assert err.value.code == "restore-too-large" and not bob.ns.exists("/back")
    Snapshots(bob).restore("s", "/sub", to="/back/sub")
    assert sorted(digests(bob, "/back/sub")) == ["/b.txt", "/big.bin"]


def test_a_large_restore_is_a_job_whose_steps_copy_the_tree_back_with_its_records(bob):
    before = _wide(bob)
    Snapshots(bob).create("/p", "s")
    plan = Snapshots(bob).plan_restore("s", "/", "/back", False, inline=5)
    assert plan.large and (plan.src, plan.dst) == ("/", "/back")
    Snapshots(bob).check_free(plan.dst, "/back")
    jobs = TreeJobs(bob.records.table)
    job = TreeJob("bob", job_id(RESTORE, "/", "/back"), RESTORE, "/", "/back", leases=[], snapshot="s")
    job.phase = APPLY
    assert jobs.create(job)
    steps = 0
    while job.state == RUNNING:
        job = jobs.get("bob", job.id)
        TreeJobStep(bob, jobs, job, Budget.of(60, 4)).run()
        steps += 1
    assert (job.state, job.done, job.files) == (SUCCEEDED, len(before), len(before)) and steps >= 3
    assert digests(bob, "/back") == before
    assert len(bob.records.files_under("bob", "/back")) == len(before)
    assert repair(bob.ns, bob.merkle, lambda _path: contextlib.nullcontext()) == []  # nodes agree with EFS


def test_a_deleted_users_snapshots_and_their_records_go_with_the_user(bob):
    from hycloud_core.fs.user_purge import purge_deleted_users

    tree(bob)
    snap = Snapshots(bob).create("/p", name="gone")
    namespaces = os.path.dirname(bob.ns.root)
    area = snapshots.SnapshotArea(namespaces, "bob")
    assert os.path.isdir(area.root) and Snapshots(bob).records.get(snap.name) is not None
    bob.records.table.put_item(Item={"pk": "USERID#bob", "sk": "ID", "state": "deleted", "deleted": 1})
    assert purge_deleted_users(bob.records.table, None, "content", namespaces, grace_s=0) == ["bob"]
    assert not os.path.exists(area.root)
    assert Snapshots(bob).records.get(snap.name) is None
