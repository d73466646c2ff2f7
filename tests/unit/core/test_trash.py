"""The trash over EFS (a temp dir), S3 and DynamoDB (moto): `rm` and `rm -r` move into it in one
rename, listings and records no longer show the path, a restore brings it back byte for byte
(409 on a taken path unless elsewhere), and upkeep purges it after the retention, only then
leaving its content to the collector."""

from __future__ import annotations

import os
import time

import pytest

from hycloud_core.errors import BadRequestError, ConflictError, NotFoundError
from hycloud_core.fs import FileSystem
from hycloud_core.fs.trash import TrashArea, purge_trash
from hycloud_core.store.quotas import Quota
from hycloud_core.store.trash_records import TrashRecords
from tests.unit.core.moto_content import put_small as put
from tests.unit.core.moto_content import sample_tree as tree
from tests.unit.core.moto_content import stored

DAY = 86400


@pytest.fixture
def bob(moto_filesystems) -> FileSystem:
    return moto_filesystems.fs("bob")


def ns_paths(fs: FileSystem) -> list[str]:
    return sorted(e.path for e in fs.ns.walk_files("/"))


def test_rm_r_is_one_rename_into_the_trash_and_the_path_is_gone_everywhere(bob, monkeypatch):
    tree(bob)
    renames: list[tuple[str, str]] = []
    real = os.rename
    monkeypatch.setattr(os, "rename", lambda a, b: (renames.append((a, b)), real(a, b))[1])
    item = bob.trash_tree("/p")
    assert len(renames) == 1 and renames[0][0] == bob.ns.host("/p")  # no walk of EFS
    item = bob.trash.settle(item)  # counted by rm -r itself, unless the machine was too slow
    assert (item.path, item.type, item.files, item.size) == ("/p", "dir", 3, 5 + 4 + 5000)
    assert not bob.ns.exists("/p") and ns_paths(bob) == []
    assert bob.records.files_under("bob", "/p") == []
    assert bob.merkle.get("/p")["kind"] == "tombstone" and bob.merkle.children("/p") == []
    assert [i.item for i in bob.trash.listing()] == [item.item]
    assert Quota(bob.records, "bob").recount().files == 0


def test_a_new_file_at_the_same_path_right_after_rm_r_is_an_ordinary_write(bob):
    tree(bob)
    bob.trash_tree("/p")
    put(bob, "/p/a.txt", b"new")
    assert bob.ns.read("/p/a.txt") == b"new"
    assert [r["path"] for r in bob.records.files_under("bob", "/p")] == ["/p/a.txt"]


def test_restore_brings_the_tree_back_byte_for_byte_with_records_and_merkle_nodes(bob):
    h = tree(bob)
    before = {p: bob.ns.read(p) for p in ns_paths(bob) if bob.ns.stat(p).storage == "small"}
    item = bob.trash_tree("/p")
    entry, restored = bob.trash.restore(item.item)
    assert entry.path == "/p" and entry.type == "dir" and restored == item
    assert {p: bob.ns.read(p) for p in before} == before
    assert bob.ns.read_link("/p/sub/big.bin").content_hash == h
    assert bob.ns.exists("/p/empty")
    assert sorted(r["path"] for r in bob.records.files_under("bob", "/p")) == [
        "/p/a.txt",
        "/p/sub/b.txt",
        "/p/sub/big.bin",
    ]
    assert bob.merkle.get("/p/sub/big.bin")["kind"] == "file" and bob.merkle.get("/p")["kind"] == "dir"
    assert bob.trash.listing() == [] and TrashArea(os.path.dirname(bob.ns.root), "bob").item_ids() == []
    assert Quota(bob.records, "bob").report()["files"]["used"] == 3


def test_restoring_a_tree_costs_the_same_whatever_it_holds(bob):
    """The folder's entry comes back with its id, and with it every record and Merkle node kept
    below it: a 10,000-file tree's restore went past API Gateway's 29 s writing them all again.
    Here 60 files cost the requests 3 do, and the Merkle tree agrees with EFS afterwards."""
    from hycloud_core.fs.merkle_scan import namespace_tree
    from tests.unit.core.merkle.test_merkle_records import assert_agrees

    def requests(files: int) -> int:
        top = f"/t{files}"
        for i in range(files):
            put(bob, f"{top}/d{i % 3}/f{i}", b"x")
        item = bob.trash.settle(bob.trash_tree(top))
        seen: list[str] = []
        hook = lambda model, **_: seen.append(model.name)  # noqa: E731
        events = bob.records.table.meta.client.meta.events
        events.register("before-call.dynamodb.*", hook)
        bob.trash.restore(item.item)
        events.unregister("before-call.dynamodb.*", hook)
        return len(seen)

    few, many = requests(3), requests(60)
    assert many <= few + 2, (few, many)
    assert bob.merkle.root_item().get("hash") in (None, namespace_tree(bob.ns).hash.hex())
    assert_agrees(bob)
    assert len(bob.records.files_under("bob", "/t60")) == 60


def test_restore_to_a_taken_path_is_409_and_to_elsewhere_works(bob):
    put(bob, "/d/f.txt", b"one")
    item = bob.delete("/d/f.txt")
    put(bob, "/d/f.txt", b"two")
    with pytest.raises(ConflictError) as err:
        bob.trash.restore(item.item)
    assert err.value.code == "already-exists"
    assert bob.ns.read("/d/f.txt") == b"two" and len(bob.trash.listing()) == 1  # nothing touched
    entry, _ = bob.trash.restore(item.item, to="/elsewhere/f.txt")
    assert entry.path == "/elsewhere/f.txt" and bob.ns.read("/elsewhere/f.txt") == b"one"
    assert bob.records.get_file("bob", "/elsewhere/f.txt")["size"] == 3
    assert bob.merkle.get("/elsewhere/f.txt")["kind"] == "file"
    with pytest.raises(NotFoundError):
        bob.trash.restore(item.item)


def test_rm_of_a_file_keeps_a_version_too(bob):
    put(bob, "/x.txt", b"x")
    bob.retain_s = DAY
    item = bob.delete("/x.txt")
    assert item.type == "file" and item.files == 1 and item.size == 1
    assert [v.reason for v in bob.history.listing("/x.txt")] == ["delete"]


def test_bad_and_unknown_items(bob):
    with pytest.raises(BadRequestError):
        bob.trash.restore("../../etc")
    with pytest.raises(NotFoundError):
        bob.trash.restore("1764400000000-0a1b2c3d")
    with pytest.raises(NotFoundError):
        bob.trash.empty("1764400000000-0a1b2c3d")


def test_empty_one_item_or_all(bob):
    put(bob, "/a", b"a")
    put(bob, "/b", b"b")
    first, second = bob.delete("/a"), bob.delete("/b")
    assert bob.trash.empty(first.item) == ([first.item], False)
    assert [i.item for i in bob.trash.listing()] == [second.item]
    assert bob.trash.empty() == ([second.item], False) and bob.trash.listing() == []


def test_the_collector_keeps_trashed_content_until_the_purge(moto_filesystems, bob):
    m = moto_filesystems
    h = tree(bob)
    bob.trash_tree("/p")
    m.objects.release(h, time.time())
    assert m.collect().reclaimed == [] and stored(bob, h)  # the trashed link names it
    ns = str(m.root / "ns")
    assert purge_trash(m.records.table, ns, default_s=30 * DAY, now=time.time() + DAY).items == []
    assert m.collect().reclaimed == [] and stored(bob, h)
    purged = purge_trash(m.records.table, ns, default_s=30 * DAY, now=time.time() + 31 * DAY)
    assert len(purged.items) == 1 and bob.trash.listing() == []
    assert m.collect().reclaimed == [h] and not stored(bob, h)


def test_a_users_own_retention_wins_and_an_override_wins_over_both(moto_filesystems):
    m = moto_filesystems
    ns = str(m.root / "ns")
    carol, dave = m.fs("carol"), m.fs("dave")
    put(carol, "/c", b"c")
    put(dave, "/d", b"d")
    carol.delete("/c")
    dave.delete("/d")
    TrashRecords(m.records.table, "carol").set_retention(60)
    assert TrashRecords(m.records.table, "carol").retention(30 * DAY) == 60
    purged = purge_trash(m.records.table, ns, default_s=30 * DAY, now=time.time() + 120)
    assert len(purged.items) == 1 and carol.trash.listing() == [] and len(dave.trash.listing()) == 1
    assert len(purge_trash(m.records.table, ns, 30 * DAY, retention_s=0).items) == 1
    with pytest.raises(BadRequestError):
        TrashRecords(m.records.table, "carol").set_retention(-1)


def test_trash_totals_are_apart_from_the_live_quota(bob):
    tree(bob)
    quota = Quota(bob.records, "bob")
    assert quota.report()["bytes"]["used"] == 5009
    bob.trash_tree("/p")
    assert bob.trash.totals() == {"bytes": 5009, "files": 3, "items": 1}  # counted, if rm -r did not
    assert quota.report()["bytes"]["used"] == 0 and quota.report()["files"]["used"] == 0


@pytest.fixture
def counted_later(monkeypatch):
    """rm -r leaves what it trashed to be counted by the next reader (as for a large tree)."""
    from hycloud_core.fs import operations

    monkeypatch.setattr(operations, "SETTLE_INLINE_S", -1.0)


def test_a_tree_rm_r_did_not_count_is_counted_once_by_the_listing(bob, counted_later):
    tree(bob)
    quota = Quota(bob.records, "bob")
    item = bob.trash_tree("/p")
    assert (item.pending, item.files, item.size) == (True, 0, 0) and not bob.ns.exists("/p")
    assert quota.report()["bytes"]["used"] == 5009  # still counted until then
    for _ in range(2):
        [listed] = bob.trash.listing()
        assert (listed.pending, listed.files, listed.size) == (False, 3, 5009)
        assert quota.report()["bytes"]["used"] == 0 and quota.report()["files"]["used"] == 0


def test_a_write_the_quota_would_refuse_counts_the_pending_trash_first(bob, counted_later):
    tree(bob)
    Quota(bob.records, "bob").set_limits(max_bytes=5100)
    bob.trash_tree("/p")
    put(bob, "/new", b"n" * 1000)  # 5009 + 1000 is over: the pending 5009 is counted off first
    assert Quota(bob.records, "bob").report()["bytes"]["used"] == 1000
    assert bob.trash.records.all()[0].size == 5009


@pytest.mark.parametrize("how", ["empty", "upkeep"])
def test_a_pending_item_purged_is_taken_off_the_quota(bob, counted_later, how):
    tree(bob)
    item = bob.trash_tree("/p")
    if how == "empty":
        bob.trash.empty(item.item)
    else:
        purge_trash(bob.records.table, os.path.dirname(bob.ns.root), 0, retention_s=0, now=time.time() + 1)
    assert Quota(bob.records, "bob").report()["bytes"]["used"] == 0 and bob.trash.listing() == []


def test_a_restore_over_the_quota_is_refused_and_keeps_the_item(bob):
    put(bob, "/q/f", b"12345")
    item = bob.trash_tree("/q")
    Quota(bob.records, "bob").set_limits(max_bytes=4)
    with pytest.raises(Exception) as err:
        bob.trash.restore(item.item)
    assert getattr(err.value, "code", "") == "quota-exceeded"
    assert [i.item for i in bob.trash.listing()] == [item.item] and not bob.ns.exists("/q")


def test_purge_leaves_no_record_without_its_folder_nor_a_folder_a_crash_claimed(moto_filesystems, bob):
    put(bob, "/a", b"a")
    item = bob.delete("/a")
    area = TrashArea(str(moto_filesystems.root / "ns"), "bob")
    os.rename(area.folder(item.item), os.path.join(area.root, ".purging-" + item.item))  # crashed purge
    purged = purge_trash(moto_filesystems.records.table, str(moto_filesystems.root / "ns"), 30 * DAY)
    assert purged.records == 1 and bob.trash.listing() == [] and os.listdir(area.root) == []


def test_a_dotfile_goes_to_the_trash_and_comes_back(bob):
    put(bob, "/.env", b"SECRET=1")
    item = bob.delete("/.env")
    assert [i.path for i in bob.trash.listing()] == ["/.env"]
    bob.trash.restore(item.item)
    assert bob.ns.read("/.env") == b"SECRET=1"


def test_rm_r_drops_every_record_of_a_tree_larger_than_one_batch(bob):
    bob.records.put_files("bob", {f"/many/f{i}": {"kind": "small", "size": 1} for i in range(60)})
    for i in range(60):
        bob.ns.write(f"/many/f{i}", b"x", parents=True)
    item = bob.trash_tree("/many")
    assert item.files == 60 and bob.records.files_under("bob", "/many") == []


def test_emptying_an_item_past_the_inline_limit_leaves_it_to_steps_that_remove_it_all(
    moto_filesystems, bob, counted_later
):
    """Emptying answers once each item is claimed: a small one is removed in the call, a large
    or uncounted one leaves the listing and the totals at once and is counted (off the quota)
    and removed by bounded steps (the emptying job's), files first, then its records."""
    for i in range(60):
        put(bob, f"/many/d{i % 3}/f{i}", b"x")
    put(bob, "/a", b"a")
    quota = Quota(bob.records, "bob")
    big, small = bob.trash_tree("/many"), bob.delete("/a")
    assert big.pending and quota.report()["files"]["used"] == 60  # counted later (/a was, alone)
    emptied, left = bob.trash.empty(inline_files=20)
    assert sorted(emptied) == sorted([big.item, small.item]) and left
    assert bob.trash.listing() == [] and bob.trash.totals() == {"bytes": 0, "files": 0, "items": 0}
    assert [i.item for i in bob.trash.records.all()] == [big.item]  # the small one is gone already
    steps, removed, held = 0, 0, []
    while not (drained := bob.trash.drain(time.monotonic() + 10, 25)).finished:
        steps, removed = steps + 1, removed + drained.files
        held.append(drained.held)
    assert steps >= 2 and removed + drained.files == 60 and held[0] == 60
    assert bob.trash.records.all() == [] and quota.report()["files"]["used"] == 0
    assert os.listdir(TrashArea(str(moto_filesystems.root / "ns"), "bob").root) == []
    records = bob.records.table.scan()["Items"]
    assert [i["sk"] for i in records if i["pk"] == "NS#bob" and i["sk"].startswith("F#")] == []


def test_a_count_past_its_deadline_begins_no_further_folder(bob, monkeypatch):
    """rm -r's inline count stops at its budget: the trashed folder's own level is always read,
    and below it no read is begun once the deadline has passed, not even a folder's second
    (each Query here takes 1 s of a fake clock, one folder at a time)."""
    from types import SimpleNamespace

    from hycloud_core.store import dir_index

    for d in range(6):
        put(bob, f"/big/d{d}/f", b"x" * 10)
    clock, queries = [0.0], []
    real = dir_index._query

    def query(table, pk, prefix):
        queries.append(prefix)
        clock[0] += 1.0
        return real(table, pk, prefix)

    monkeypatch.setattr(dir_index, "_query", query)
    monkeypatch.setattr(dir_index, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    monkeypatch.setattr(dir_index, "_POOL", SimpleNamespace(map=lambda fn, *its: list(map(fn, *its))))
    folder = bob.records.dirs.resolver("bob").dir_id("/big")
    assert bob.records.dirs.subtree("bob", folder, "/big", deadline=2.5) is None
    # /big's entries and files, then one read below before 2.5 s passed: none begun after it
    assert queries[:2] == [f"D#{folder}/", f"F#{folder}/"] and len(queries) == 3
    clock[0], queries[:] = 0.0, []
    whole = bob.records.dirs.subtree("bob", folder, "/big", deadline=100.0)
    assert whole is not None and len(whole.files) == 6 and len(queries) == 14


def test_a_listing_counts_pending_items_for_its_budget_only(bob, counted_later, monkeypatch):
    """GET /v1/trash of a pending 100,000-file item went past API Gateway's 29 s counting it: a
    listing (and the usage report) counts for a bounded time, and what it did not finish stays
    pending (upkeep's purge and emptying count it whole)."""
    from hycloud_core.fs import trash as trash_module

    for d in range(3):
        put(bob, f"/big/d{d}/f", b"x" * 10)
    bob.trash_tree("/big")
    monkeypatch.setattr(trash_module, "READ_SETTLE_S", 0.0)
    [listed] = bob.trash.listing()
    assert listed.pending and (listed.files, listed.size) == (0, 0)
    assert bob.trash.totals()["items"] == 1 and Quota(bob.records, "bob").report()["bytes"]["used"] == 30
    monkeypatch.setattr(trash_module, "READ_SETTLE_S", 60.0)
    [listed] = bob.trash.listing()
    assert (listed.pending, listed.files, listed.size) == (False, 3, 30)
