"""Issue 31 (moto): what the trash and the version history keep on the primary is on the standby
after a pass, as the primary holds it (same items, same versions), and restores there byte-exact:
a trashed tree, an older small version, an older large version (its content in the standby's
bucket). What the primary purges goes from the standby too; a pass with nothing new sends nothing."""

from __future__ import annotations

import os
import time
from dataclasses import replace

import pytest

import hycloud_core.fs.snapshots
from hycloud_core import content
from hycloud_core.fs import FileSystem
from hycloud_core.standby.replicate import run_pass
from tests.conftest import MOTO_BUCKET
from tests.unit.core.moto_content import put_large
from tests.unit.core.standby.conftest import RETAIN_S, STANDBY_BUCKET, put


@pytest.fixture(autouse=True)
def _copied_within_the_request(monkeypatch):
    """These trees are copied within `create` (ready at once), however loaded the machine."""
    monkeypatch.setattr(hycloud_core.fs.snapshots, "INLINE_S", 30.0)


def at_home(primary: FileSystem) -> dict[str, bytes]:
    """A user's files: a tree with a large file in it, a small and a large file to overwrite."""
    put(primary, "/p/a.txt", b"alpha")
    put(primary, "/p/sub/b.txt", b"beta")
    primary.mkdir("/p/empty")
    put_large(primary, "/p/sub/big.bin", b"L" * 5000)
    put(primary, "/doc.txt", b"first draft")
    put_large(primary, "/movie.bin", b"M" * 6000)
    put(primary, "/gone.txt", b"soon in the trash")
    return {"/p/a.txt": b"alpha", "/p/sub/b.txt": b"beta", "/p/sub/big.bin": b"L" * 5000}


def standby_bytes(fs: FileSystem, path: str) -> bytes:
    """A file's bytes on the standby: a small file's from its EFS, a large one's from its bucket."""
    entry = fs.ns.stat(path)
    if entry.storage == "small":
        return fs.ns.read(path)
    h = fs.ns.read_link(path).content_hash
    return fs.s3.get_object(Bucket=STANDBY_BUCKET, Key=content.object_key(h))["Body"].read()


def test_trash_and_history_survive_a_failover_byte_exact(pair):
    primary, standby_fs, standby, ns_dir = pair
    primary.retain_s = RETAIN_S
    table = primary.records.table
    tree = at_home(primary)
    run_pass(table, ns_dir, standby)

    item = primary.trash_tree("/p")
    primary.delete("/gone.txt")
    put(primary, "/doc.txt", b"second draft")
    put_large(primary, "/movie.bin", b"N" * 6000)
    run_pass(table, ns_dir, standby)

    # the standby's trash and history are the primary's, item for item, version for version
    assert standby_fs.trash.listing() == primary.trash.listing()
    for path in ("/doc.txt", "/movie.bin", "/gone.txt"):
        assert standby_fs.history.listing(path) == primary.history.listing(path)

    # after a failover: restores on the standby, byte-exact
    standby_fs.trash.restore(item.item)
    assert {p: standby_bytes(standby_fs, p) for p in tree} == tree
    assert sorted(r["path"] for r in standby_fs.records.files_under(standby_fs.user, "/p")) == sorted(tree)
    old_doc = standby_fs.history.listing("/doc.txt")[0]
    standby_fs.history.restore("/doc.txt", old_doc.version)
    assert standby_fs.ns.read("/doc.txt") == b"first draft"
    old_movie = standby_fs.history.listing("/movie.bin")[0]
    standby_fs.history.restore("/movie.bin", old_movie.version)
    assert standby_bytes(standby_fs, "/movie.bin") == b"M" * 6000
    gone = next(i for i in standby_fs.trash.listing() if i.path == "/gone.txt")
    standby_fs.trash.restore(gone.item)
    assert standby_fs.ns.read("/gone.txt") == b"soon in the trash"


def test_snapshots_survive_a_failover_and_one_removed_goes_from_the_standby(pair):
    """A snapshot is a tree of its own beside the namespace (fs/snapshots.py), which the Merkle
    exchange never sees: it comes by the kept ops, its record once its tree landed, and restores
    on the standby byte-exact after the files it copied were changed and removed."""
    from hycloud_core.fs.snapshots import Snapshots

    primary, standby_fs, standby, ns_dir = pair
    table = primary.records.table
    tree = at_home(primary)
    Snapshots(primary).create("/p", "before")
    put(primary, "/p/a.txt", b"changed")
    primary.trash_tree("/p/sub")
    run_pass(table, ns_dir, standby)

    mirrored = Snapshots(standby_fs)
    assert mirrored.listing() == Snapshots(primary).listing()
    assert run_pass(table, ns_dir, standby)["copied"] == 0  # nothing new: nothing sent
    mirrored.restore("before", to="/back")  # as after a failover
    assert {p: standby_bytes(standby_fs, p.replace("/p/", "/back/", 1)) for p in tree} == tree
    Snapshots(primary).create("/p", "again")
    Snapshots(primary).remove("before")
    run_pass(table, ns_dir, standby)
    assert [s.name for s in mirrored.listing()] == ["again"]
    assert sorted(os.listdir(mirrored.area.root)) == [Snapshots(primary).get("again").id]


def test_what_the_primary_purges_goes_from_the_standby_and_nothing_new_sends_nothing(pair):
    primary, standby_fs, standby, ns_dir = pair
    primary.retain_s = RETAIN_S
    table = primary.records.table
    at_home(primary)
    primary.trash_tree("/p")
    put(primary, "/doc.txt", b"second draft")
    run_pass(table, ns_dir, standby)
    assert len(standby_fs.trash.listing()) == 1 and len(standby_fs.history.listing("/doc.txt")) == 1

    assert run_pass(table, ns_dir, standby)["copied"] == 0  # incremental: nothing new, nothing sent

    primary.trash.empty()
    primary.history.records.delete(primary.history.records.all())
    run_pass(table, ns_dir, standby)
    assert standby_fs.trash.listing() == [] and standby_fs.trash.area.item_ids() == []
    assert standby_fs.history.records.all() == []


def test_an_item_whose_copy_failed_has_no_record_on_the_standby_until_a_pass_lands_it(pair):
    primary, standby_fs, standby, ns_dir = pair
    table = primary.records.table
    at_home(primary)
    item = primary.trash_tree("/p")
    real, refused = standby.apply, []

    def refusing_links(user, ops):  # the standby's EFS refuses the item's link file, once
        links = [op for op in ops if op["op"] == "link" and "trash" in op]
        if refused or not links:
            return real(user, ops)
        refused.extend(links)
        answer = real(user, [op for op in ops if op not in links])
        failed = [{"path": op["path"], "trash": op["trash"], "op": "link", "error": "EIO"} for op in links]
        return {**answer, "failed": answer["failed"] + failed}

    standby.apply = refusing_links
    first = run_pass(table, ns_dir, standby)
    assert not first["in_step"] and standby_fs.trash.listing() == []
    second = run_pass(table, ns_dir, standby)
    assert second["in_step"] and [i.item for i in standby_fs.trash.listing()] == [item.item]
    standby_fs.trash.restore(item.item)
    assert standby_bytes(standby_fs, "/p/sub/big.bin") == b"L" * 5000


def test_a_user_is_compared_until_the_change_settles_then_not_at_all(pair, monkeypatch):
    from hycloud_core.standby import kept_copy
    from hycloud_core.store.version_records import VersionRecords

    primary, standby_fs, standby, ns_dir = pair
    primary.retain_s = RETAIN_S
    table = primary.records.table
    at_home(primary)
    primary.trash_tree("/p")
    run_pass(table, ns_dir, standby)
    put(primary, "/doc.txt", b"second draft")
    run_pass(table, ns_dir, standby)
    late = primary.history.listing("/doc.txt")[0]  # a record landing after the pass saw the change
    VersionRecords(table, primary.user).put(replace(late, path="/late.txt"))
    reads: list[str] = []
    real = kept_copy.partition
    monkeypatch.setattr(kept_copy, "partition", lambda t, pk: (reads.append(pk), real(t, pk))[1])
    run_pass(table, ns_dir, standby)
    assert standby_fs.history.listing("/late.txt") == primary.history.listing("/late.txt")

    clock = time.time() + kept_copy.SETTLE_S + 1
    monkeypatch.setattr(kept_copy.time, "time", lambda: clock)
    reads.clear()
    run_pass(table, ns_dir, standby)  # begun SETTLE_S after the change was seen: settles it
    assert len(reads) == 6
    reads.clear()
    assert run_pass(table, ns_dir, standby)["in_step"] and reads == []  # settled and unchanged

    primary.trash.empty()  # no namespace change: the trash area's listing tells
    run_pass(table, ns_dir, standby)
    assert len(reads) == 6 and standby_fs.trash.listing() == []


def test_a_file_removed_and_restored_between_passes_still_brings_its_version(pair, monkeypatch):
    from hycloud_core.standby import kept_copy

    primary, standby_fs, standby, ns_dir = pair
    primary.retain_s = RETAIN_S
    table = primary.records.table
    at_home(primary)
    run_pass(table, ns_dir, standby)
    clock = time.time() + kept_copy.SETTLE_S + 1
    monkeypatch.setattr(kept_copy.time, "time", lambda: clock)
    run_pass(table, ns_dir, standby)  # settled: the next pass compares only if something changed
    item = primary.delete("/gone.txt")
    primary.trash.restore(item.item)  # the same tree and trash as before, one version more
    run_pass(table, ns_dir, standby)
    assert [v.reason for v in standby_fs.history.listing("/gone.txt")] == ["delete"]


def test_many_new_versions_and_items_go_in_a_few_invocations(pair):
    primary, standby_fs, standby, ns_dir = pair
    primary.retain_s = RETAIN_S
    table = primary.records.table
    for i in range(30):
        put(primary, "/doc.txt", b"draft %d" % i)
        put(primary, f"/t{i}.txt", b"%d" % i)
        primary.delete(f"/t{i}.txt")
    calls, real = [], standby.apply
    standby.apply = lambda user, ops: (calls.append(len(ops)), real(user, ops))[1]
    run_pass(table, ns_dir, standby)
    assert len(standby_fs.history.listing("/doc.txt")) == 29 and len(standby_fs.trash.listing()) == 30
    assert len(calls) <= 3  # the namespace, the trash items, the versions' bytes


def test_a_large_version_whose_content_is_gone_at_home_is_not_sent_and_stops_nothing(pair):
    primary, standby_fs, standby, ns_dir = pair
    primary.retain_s = RETAIN_S
    table = primary.records.table
    run_pass(table, ns_dir, standby)  # the first pass's backfill done
    old = put_large(primary, "/movie.bin", b"M" * 6000)
    gone = put_large(primary, "/film.bin", b"F" * 6000)
    put_large(primary, "/movie.bin", b"N" * 6000)
    put_large(primary, "/film.bin", b"G" * 6000)
    put(primary, "/doc.txt", b"one")
    put(primary, "/doc.txt", b"two")
    primary.s3.delete_object(Bucket=MOTO_BUCKET, Key=content.object_key(old))  # content reclaimed
    primary.s3.delete_object(Bucket=MOTO_BUCKET, Key=content.object_key(gone))  # and its record too
    table.delete_item(Key={"pk": f"OBJ#{gone}", "sk": "OBJ"})
    assert run_pass(table, ns_dir, standby)["complete"]
    assert standby_fs.history.records.all() == [v for v in primary.history.records.all() if v.kind == "small"]


def test_an_item_still_being_counted_reaches_the_standby_with_the_primarys_count(pair, monkeypatch):
    """rm -r counts what it trashed for SETTLE_INLINE_S (40 ms) and leaves a tree it did not
    finish pending. The standby took the pending record and counted it from its own file records,
    of which a trashed tree has none there: its listing showed 0 bytes, 0 files (the failover
    end-to-end test on a loaded machine). The pass counts a pending item before copying it."""
    from hycloud_core.fs import operations

    primary, standby_fs, standby, ns_dir = pair
    table = primary.records.table
    at_home(primary)
    run_pass(table, ns_dir, standby)
    monkeypatch.setattr(operations, "SETTLE_INLINE_S", 0.0)
    item = primary.trash_tree("/p")
    assert item.pending  # as rm -r left it on a loaded machine
    assert run_pass(table, ns_dir, standby)["in_step"]
    assert standby_fs.trash.listing() == primary.trash.listing()
    copied = standby_fs.trash.listing()[0]
    assert (copied.files, copied.size, copied.pending) == (3, 5 + 4 + 5000, False)
