"""File records keyed by folder id (store/dir_index.py, moto): a folder's move, rename or trashing
rewrites one entry whatever it holds, paths resolve level by level, copies get new folder ids,
and listings by ids find exactly what a listing by paths would."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from hycloud_core.store.dir_index import ROOT, Resolver
from hycloud_core.store.records import Records
from tests.conftest import MOTO_TABLE

U = "u"


@pytest.fixture
def records(moto_filesystems) -> Records:
    r = Records(MOTO_TABLE)
    r.dirs.mark_migrated(U)
    return r


def calls(records: Records) -> Counter:
    """DynamoDB operations the table's client makes from now on, by name."""
    seen: Counter = Counter()
    records.table.meta.client.meta.events.register(
        "before-call.dynamodb.*", lambda model, **_: seen.update([model.name])
    )
    return seen


def tree(records: Records, root: str, n: int) -> dict[str, int]:
    files = {f"{root}/d{i % 10}/s{i % 3}/f{i}": i for i in range(n)}
    records.put_files(U, {p: {"kind": "small", "size": s} for p, s in files.items()})
    return files


def listed(records: Records, path: str) -> dict[str, int]:
    return {r["path"]: r["size"] for r in records.files_under(U, path)}


def keys(records: Records) -> set[str]:
    return {i["sk"] for i in records.table.scan()["Items"] if i["sk"].startswith("F#")}


def test_a_record_is_keyed_by_its_folder_id_and_name(records):
    records.put_file(U, "/top.txt", kind="small", size=1)
    records.put_file(U, "/a/b/c.txt", kind="small", size=2)
    b = Resolver(records.table, U).dir_id("/a/b")
    assert keys(records) == {f"F#{ROOT}/top.txt", f"F#{b}/c.txt"}
    assert records.get_file(U, "/a/b/c.txt")["size"] == 2 and records.get_file(U, "/a/x") is None
    records.delete_file(U, "/a/b/c.txt")
    assert records.get_file(U, "/a/b/c.txt") is None and listed(records, "/") == {"/top.txt": 1}


def test_two_writers_making_one_folder_agree_on_its_id(records):
    first, second = Resolver(records.table, U), Resolver(records.table, U)
    made = first.dir_id("/x/y", create=True)
    assert second._make(first.dir_id("/x") or "", "y") == made  # the entry was there: its id wins


def test_a_folder_move_rewrites_one_entry_not_its_records(records):
    files = tree(records, "/src", 300)
    before, seen = keys(records), calls(records)
    records.rewrite_subtree(U, "/dst/inner", None)
    records.rewrite_subtree(U, "/src", "/dst/inner")
    writes = {
        k: n
        for k, n in seen.items()
        if k in ("PutItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")
    }
    assert writes == {"PutItem": 1, "TransactWriteItems": 1}  # the entry /dst, then the move
    assert seen["GetItem"] <= 8 and seen["Query"] == 0
    assert keys(records) == before  # every record as it was
    assert listed(records, "/dst/inner") == {p.replace("/src", "/dst/inner", 1): s for p, s in files.items()}
    assert listed(records, "/src") == {} and records.get_file(U, "/src/d1/s1/f1") is None


def test_a_file_move_and_a_move_onto_an_emptied_path(records):
    records.put_file(U, "/a/f", kind="small", size=5)
    records.rewrite_subtree(U, "/a/f", "/b/g")
    assert listed(records, "/") == {"/b/g": 5}
    tree(records, "/t", 20)
    records.rewrite_subtree(U, "/t", "/a")
    records.rewrite_subtree(U, "/a", "/t")  # back to where it was, the entry at /a gone
    assert len(listed(records, "/t")) == 20 and listed(records, "/a") == {}


def test_copy_gives_new_folder_ids_and_both_trees_stand_alone(records):
    files = tree(records, "/s", 30)
    records.rewrite_subtree(U, "/s", "/c", keep_src=True)
    assert listed(records, "/c") == {p.replace("/s", "/c", 1): s for p, s in files.items()}
    r = Resolver(records.table, U)
    assert r.dir_id("/s/d1") != r.dir_id("/c/d1")
    records.rewrite_subtree(U, "/s", None)
    assert listed(records, "/s") == {} and len(listed(records, "/c")) == 30


def test_delete_of_a_subtree_leaves_no_record_or_entry(records):
    tree(records, "/t", 40)
    records.put_file(U, "/keep", kind="small", size=1)
    records.rewrite_subtree(U, "/t", None)
    left = {i["sk"] for i in records.table.scan()["Items"] if i["sk"][:2] in ("F#", "D#")}
    assert left == {f"F#{ROOT}/keep"}


def test_trash_takes_a_folder_in_one_rewrite_and_gives_it_back(records):
    files = tree(records, "/p", 200)
    seen = calls(records)
    records.to_trash(U, "/p", "0001-item")
    assert seen["TransactWriteItems"] == 1 and seen["BatchWriteItem"] == seen["Query"] == 0
    assert listed(records, "/") == {}
    assert records.from_trash(U, "0001-item", "/back")
    assert listed(records, "/back") == {p.replace("/p", "/back", 1): s for p, s in files.items()}
    records.to_trash(U, "/back", "0002-item")
    assert records.purge_trashed(U, "0002-item")
    assert [i for i in records.table.scan()["Items"] if i["sk"][:2] in ("F#", "D#")] == []
    assert records.purge_trashed(U, "0002-item") and not records.from_trash(U, "0002-item", "/x")


def test_a_purge_past_its_deadline_stops_and_the_next_one_finishes_what_it_left(records, monkeypatch):
    """A bounded purge (emptying a large item, a step at a time) deletes deepest first, so what
    it leaves is still reached from the item's entry and the next call removes it all."""
    tree(records, "/p", 20)
    for k in range(3):
        tree(records, f"/p/sub{k}/deeper", 10)
    records.to_trash(U, "/p", "0003-item")
    monkeypatch.setattr("hycloud_core.store.records.DELETE_ROUND", 10)
    monkeypatch.setattr("hycloud_core.store.merkle_records.DROP_ROUND", 10)
    rounds = 1
    while not records.purge_trashed(U, "0003-item", deadline=time.monotonic() - 1):  # one round a call
        rounds += 1
    assert rounds >= (20 + 3 * 10) // 10
    assert [i for i in records.table.scan()["Items"] if i["sk"][:2] in ("F#", "D#")] == []


def test_move_page_moves_the_entry_once_then_answers_nothing_left(records):
    tree(records, "/t", 50)
    assert records.move_page(U, "/t", "/m", 10) == 1
    assert records.move_page(U, "/t", "/m", 10) == 0
    assert len(listed(records, "/m")) == 50


def test_resolution_reads_one_entry_per_level(records):
    deep = "/" + "/".join(f"l{i}" for i in range(20))
    records.put_file(U, f"{deep}/f", kind="small", size=3)
    seen = calls(records)
    assert records.get_file(U, f"{deep}/f")["size"] == 3
    assert seen["GetItem"] == 20 + 1  # 20 levels, then the record (the layout is known)
