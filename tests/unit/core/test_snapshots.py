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

import hycloud_core.fs.snapshots as snapshots
from hycloud_core.errors import BadRequestError, ConflictError, NotFoundError, PayloadTooLargeError
from hycloud_core.fs import FileSystem
from hycloud_core.fs.merkle_scan import repair
from hycloud_core.fs.snapshots import Snapshots
from hycloud_core.fs.trash import purge_trash
from hycloud_core.store.quotas import Quota
from tests.unit.core.moto_content import put_large, stored
from tests.unit.core.moto_content import put_small as put
from tests.unit.core.moto_content import sample_tree as tree

DAY = 86400


@pytest.fixture
def bob(moto_filesystems) -> FileSystem:
    return moto_filesystems.fs("bob")


def digests(fs: FileSystem, root: str) -> dict[str, str]:
    """Each file below `root` (relative) by the sha256 of its bytes, or its content hash if large."""
    out = {}
    for e in fs.ns.walk_files(root):
        rel = e.path[len(root) :]
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


def test_a_tree_above_the_limit_is_refused_and_leaves_nothing(bob, monkeypatch):
    tree(bob)
    monkeypatch.setattr(snapshots, "MAX_ENTRIES", 3)
    with pytest.raises(PayloadTooLargeError) as err:
        Snapshots(bob).create("/p", "big")
    assert err.value.code == "snapshot-too-large" and Snapshots(bob).listing() == []


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
