"""The Merkle hashes kept in DynamoDB (moto) follow every filesystem operation, races and repairs."""

from __future__ import annotations

import contextlib

import pytest

from hycloud_core.fs.merkle_scan import namespace_tree, repair
from hycloud_core.merkle import Responder
from hycloud_core.merkle.exchange import VIRTUAL_ROOT
from hycloud_core.store import merkle_records
from hycloud_core.store.merkle_records import MerkleRecords, children_prefix, node_key


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


def test_keys_select_exactly_the_children():
    assert node_key("/") == "/" and node_key("/a") == "///a" and node_key("/a/b") == "/a//b"
    assert node_key("/a/b").startswith(children_prefix("/a"))
    assert not node_key("/a/b/c").startswith(children_prefix("/a"))
    assert not node_key("/ab").startswith(children_prefix("/a"))
    assert node_key("/a/b/c").startswith("/a/") and not node_key("/a").startswith("/a/")


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
    page, reads, raced = MerkleRecords._page, [], []

    def read_then_write(self, prefix):
        found = page(self, prefix)
        reads.append(prefix)
        if reads.count("/") == 2 and not raced:  # the read the children are taken from
            raced.append(True)
            put(fs, "/d/c", b"c")  # lands after the recompute read /d's children
        return found

    monkeypatch.setattr(MerkleRecords, "_page", read_then_write)
    stale = fs.merkle.root_item()["hash"]
    monkeypatch.setattr(MerkleRecords, "_page", page)
    assert raced and stale != namespace_tree(fs.ns).hash.hex()
    assert_agrees(fs)  # the stored hashes were not the racing recompute's


def test_upkeep_repairs_what_disagrees_with_efs(fs):
    put(fs, "/d/a", b"a")
    put(fs, "/d/e/b", b"b")
    fs.mkdir("/x")
    tree = fs.merkle
    tree.root_item()
    tree.table.delete_item(Key={"pk": tree.pk, "sk": node_key("/d/a")})  # a lost write
    tree.table.put_item(
        Item={
            "pk": tree.pk,
            "sk": node_key("/ghost"),
            "path": "/ghost",
            "kind": "file",
            "digest": "00" * 32,
            "hash": "00" * 16,
            "mtime": 1,
        }
    )
    tree.table.update_item(
        Key={"pk": tree.pk, "sk": node_key("/d/e")},
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
    fs.merkle.table.delete_item(Key={"pk": fs.merkle.pk, "sk": node_key("/d/b")})
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
