"""The Merkle hashes kept in DynamoDB (moto) follow every filesystem operation, races and repairs."""

from __future__ import annotations

import contextlib

import pytest

from hycloud_core.fs.merkle_scan import namespace_tree, repair
from hycloud_core.merkle import Responder
from hycloud_core.merkle.exchange import VIRTUAL_ROOT
from hycloud_core.store import merkle_records
from hycloud_core.store.merkle_records import MerkleRecords


@pytest.fixture
def fs(moto_filesystems):
    return moto_filesystems.fs("u1")


def put(fs, path: str, data: bytes) -> None:
    import hashlib

    fs.put_small(path, data, hashlib.sha256(data).hexdigest(), parents=True)


def live(answer: dict) -> dict:
    """Path -> (kind, hash) of every live summary in an exchange answer."""
    return {
        s["path"]: (s["kind"], s["hash"])
        for kids in answer.values()
        for s in kids
        if s["kind"] != "tombstone"
    }


def assert_agrees(fs) -> None:
    """Every folder's children, as the route tells them, are what EFS says."""
    tree = namespace_tree(fs.ns)
    folders = [VIRTUAL_ROOT] + [n.path for n in tree.walk() if n.kind == "dir"]
    assert live(fs.merkle.answer(folders)) == live(Responder(tree).answer(folders))
    assert fs.merkle.root_item()["hash"] == tree.hash.hex()


def sk_of(fs, path: str) -> str:
    """The key of the node at `path` now (the folder ids are the directory index's)."""
    return fs.merkle._sk(fs.merkle.resolver(), path)


def test_nodes_are_keyed_by_their_folders_id_and_name(fs):
    put(fs, "/a/b/c.txt", b"c")
    a = fs.merkle.get("/a")
    assert sk_of(fs, "/a") == "root/a" and a["id"] == fs.records.dirs.resolver("u1").dir_id("/a")
    assert sk_of(fs, "/a/b/c.txt") == f"{fs.merkle.get('/a/b')['id']}/c.txt"
    assert (
        "path"
        not in fs.records.table.get_item(Key={"pk": fs.merkle.pk, "sk": sk_of(fs, "/a/b/c.txt")})["Item"]
    )


def test_every_operation_keeps_the_hashes_right(fs):
    assert_agrees(fs)
    put(fs, "/docs/a.txt", b"a")
    put(fs, "/docs/sub/b.txt", b"b")
    fs.mkdir("/empty")
    assert_agrees(fs)
    before = fs.merkle.root_item()["hash"]
    put(fs, "/docs/sub/b.txt", b"b2")
    assert fs.merkle.root_item()["hash"] != before
    assert_agrees(fs)
    fs.copy("/docs", "/copy")
    assert_agrees(fs)
    fs.move("/copy/sub", "/moved")
    assert_agrees(fs)
    fs.move("/docs/a.txt", "/a.txt")
    assert_agrees(fs)
    fs.delete("/a.txt")
    fs.rmdir("/empty")
    fs.rmdir("/docs", recursive=True)
    assert_agrees(fs)


def test_deletions_leave_tombstones_until_they_expire(fs, monkeypatch):
    put(fs, "/d/a", b"a")
    put(fs, "/d/b", b"b")
    fs.delete("/d/a")
    kids = {s["path"]: s for s in fs.merkle.answer(["/d"])["/d"]}
    assert kids["/d/a"]["kind"] == "tombstone" and kids["/d/a"]["hash"] == ""
    put(fs, "/d/a", b"again")  # a live file supersedes the mark
    assert fs.merkle.answer(["/d"])["/d"][0]["kind"] == "file"
    fs.delete("/d/b")
    monkeypatch.setattr(merkle_records, "TOMBSTONE_TTL_S", -1)
    fs.delete("/d/a")
    assert [s["path"] for s in fs.merkle.answer(["/d"])["/d"]] == ["/d/b"]  # /d/a's mark is past its TTL


def test_a_mutation_racing_a_recompute_is_not_hidden(fs, monkeypatch):
    put(fs, "/d/a", b"a")
    fs.merkle.root_item()
    put(fs, "/d/b", b"b")  # /d and / are stale now
    read, raced = MerkleRecords._children_of, []
    d = fs.merkle.get("/d")["id"]

    def read_then_write(self, folder):
        found = read(self, folder)
        if folder == d and not raced:  # the read /d's hash is computed from
            raced.append(True)
            put(fs, "/d/c", b"c")  # lands after the recompute read /d's children
        return found

    monkeypatch.setattr(MerkleRecords, "_children_of", read_then_write)
    stale = fs.merkle.root_item()["hash"]
    monkeypatch.setattr(MerkleRecords, "_children_of", read)
    assert raced and stale != namespace_tree(fs.ns).hash.hex()
    assert_agrees(fs)  # the stored hashes were not the racing recompute's


def test_upkeep_repairs_what_disagrees_with_efs(fs):
    put(fs, "/d/a", b"a")
    put(fs, "/d/e/b", b"b")
    fs.mkdir("/x")
    tree = fs.merkle
    tree.root_item()
    tree.table.delete_item(Key={"pk": tree.pk, "sk": sk_of(fs, "/d/a")})  # a lost write
    tree.table.put_item(
        Item={
            "pk": tree.pk,
            "sk": sk_of(fs, "/ghost"),
            "name": "ghost",
            "kind": "file",
            "digest": "00" * 32,
            "hash": "00" * 16,
            "mtime": 1,
        }
    )
    tree.table.update_item(
        Key={"pk": tree.pk, "sk": sk_of(fs, "/d/e")},
        UpdateExpression="SET #h = :h",
        ExpressionAttributeNames={"#h": "hash"},
        ExpressionAttributeValues={":h": "11" * 16},
    )
    fixed = repair(fs.ns, tree, lambda path: contextlib.nullcontext())
    assert {"/d/a", "/ghost"} <= set(fixed)
    assert_agrees(fs)
    assert repair(fs.ns, tree, lambda path: contextlib.nullcontext()) == []


def test_reconcile_repairs_the_hashes_using_checked_records(fs):
    from hycloud_core.fs.reconcile import reconcile_user

    put(fs, "/d/a", b"a")
    put(fs, "/d/b", b"b" * 3000)
    fs.merkle.root_item()
    assert reconcile_user(fs.records, fs.ns, fs.user, grace_s=0).merkle_repaired == []
    fs.merkle.table.delete_item(Key={"pk": fs.merkle.pk, "sk": sk_of(fs, "/d/b")})
    assert "/d/b" in reconcile_user(fs.records, fs.ns, fs.user, grace_s=0).merkle_repaired
    assert_agrees(fs)


@pytest.mark.slow
def test_an_answer_stays_under_its_byte_limit_and_the_rest_is_asked_again(fs):
    """A Lambda function answers at most 6 MB: folders past `max_bytes` are left out of one answer
    (never cut inside one) and a second request gets them; the first is answered whatever its size."""
    import json

    folders = [f"/big/d{i}" for i in range(4)]
    for folder in folders:
        for j in range(30):
            put(fs, f"{folder}/file-{j:03d}.txt", f"{folder} {j}".encode())
    whole = fs.merkle.answer(folders)
    one = max(len(json.dumps({p: whole[p]})) for p in folders)  # mtimes' digits vary by a few bytes
    first = fs.merkle.answer(folders, max_bytes=2 * one + 10)
    assert list(first) == folders[:2] and first == {p: whole[p] for p in folders[:2]}
    assert len(json.dumps(first)) <= 2 * one + 10
    rest = fs.merkle.answer([p for p in folders if p not in first], max_bytes=2 * one + 10)
    assert {**first, **rest} == whole and all(len(kids) == 30 for kids in whole.values())
    assert list(fs.merkle.answer(folders, max_bytes=10)) == folders[:1]


def _partition(fs) -> dict[str, dict]:
    from boto3.dynamodb.conditions import Key

    from hycloud_core.store.pages import query_all

    return {i["sk"]: i for i in query_all(fs.merkle.table, Key("pk").eq(fs.merkle.pk), consistent=True)}


def test_a_folder_move_writes_the_two_parent_chains_only(fs):
    for i in range(30):
        put(fs, f"/p/q/tree/d{i % 3}/f{i}", f"{i}".encode())
    put(fs, "/other/x", b"x")
    hashed = fs.merkle.root_item()["hash"]
    moving = fs.merkle.get("/p/q/tree")["hash"]
    before = _partition(fs)
    fs.move("/p/q/tree", "/other/tree")
    after = _partition(fs)
    changed = {sk for sk in after if before.get(sk) != after[sk]} | (before.keys() - after.keys())
    # the moved node, its tombstone, and the folders above either end: /p/q, /p, /other, /
    assert len(changed) == 6, sorted(changed)
    assert_agrees(fs)
    assert fs.merkle.root_item()["hash"] != hashed
    assert fs.merkle.get("/other/tree")["hash"] == moving  # nothing below was touched


def test_a_copy_keeps_the_hashes_and_nothing_is_rehashed(fs):
    put(fs, "/src/a/b", b"b")
    put(fs, "/src/c", b"c")
    fs.merkle.root_item()
    src = fs.merkle.get("/src")["hash"]
    fs.copy("/src", "/dst")
    dst = fs.merkle.get("/dst")
    assert dst["hash"] == src and fs.merkle.get("/dst/a")["hash"] == fs.merkle.get("/src/a")["hash"]
    assert dst["id"] != fs.merkle.get("/src")["id"]
    assert_agrees(fs)


def test_the_trash_keeps_a_folders_nodes_and_emptying_drops_them(fs):
    put(fs, "/t/a/b", b"b")
    put(fs, "/t/c", b"c")
    folder = fs.merkle.get("/t")["id"]
    fs.merkle.root_item()  # hashes recomputed: each folder's listing written beside it
    assert f"{folder}/" in _partition(fs)
    item = fs.trash_tree("/t")
    assert fs.merkle.get("/t")["kind"] == "tombstone"
    assert any(sk.startswith(folder + "/") for sk in _partition(fs))  # kept with the trashed folder
    assert_agrees(fs)
    fs.trash.empty(item.item)
    assert not any(sk.startswith(folder + "/") for sk in _partition(fs))  # its listing too
    assert_agrees(fs)


def test_upkeep_migrates_a_tree_keyed_by_path(fs):
    from hycloud_core.fs.reconcile import reconcile_user
    from hycloud_core.store.merkle_records import LAYOUT_VERSION

    put(fs, "/d/a", b"a")
    put(fs, "/d/e/b", b"b")
    for sk, path in (("///d", "/d"), ("/d//a", "/d/a"), ("/d//e", "/d/e"), ("/d/e//b", "/d/e/b")):
        fs.merkle.table.put_item(Item={"pk": fs.merkle.pk, "sk": sk, "path": path, "kind": "dir", "mtime": 1})
    fs.merkle.table.delete_item(Key={"pk": fs.merkle.pk, "sk": fs.merkle._sk(fs.merkle.resolver(), "/d/a")})
    fs.merkle.table.delete_item(Key={"pk": fs.merkle.pk, "sk": "LAYOUT"})  # as main before it wrote
    assert fs.merkle.layout_version() < LAYOUT_VERSION
    assert reconcile_user(fs.records, fs.ns, fs.user, grace_s=0).merkle_rebuilt == 5  # /, /d, /d/e, 2 files
    assert not [sk for sk in _partition(fs) if sk.startswith("/") and sk != "/"]
    assert fs.merkle.layout_version() == LAYOUT_VERSION
    assert_agrees(fs)
    assert reconcile_user(fs.records, fs.ns, fs.user, grace_s=0).merkle_repaired == []
