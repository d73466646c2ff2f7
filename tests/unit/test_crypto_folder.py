"""An encrypted folder over an in-memory store: round trip, dedup, delta, and every refusal."""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path

import pytest

from hycloud.encrypted import EncryptedFolder, MemoryStore, download, upload
from hycloud.encrypted.counters import Counters
from hycloud_core.crypto import chunks
from hycloud_core.crypto.errors import IntegrityError, RollbackError, WrongKeyError
from hycloud_core.crypto.keys import KdfParams

CHEAP = KdfParams(n=2**10)
MARKER = b"PLAINTEXT-MARKER-7f3a"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def tree(tmp_path) -> Path:
    src = tmp_path / "src"
    (src / "sub dir").mkdir(parents=True)
    (src / "notes-secret.txt").write_bytes(MARKER * 50)
    (src / "sub dir" / "big-secret.bin").write_bytes(random.Random(2).randbytes(3 * 1024 * 1024) + MARKER)
    (src / "empty.txt").write_bytes(b"")
    return src


def make(store: MemoryStore | None = None, counters: Counters | None = None) -> EncryptedFolder:
    return EncryptedFolder.create(store or MemoryStore(), "alice", b"pw", CHEAP, counters or Counters())


def reopen(folder: EncryptedFolder, counters: Counters | None = None) -> EncryptedFolder:
    return EncryptedFolder.open(folder.store, "alice", b"pw", counters or Counters())


def test_tree_round_trip_byte_exact_and_nothing_plain_is_stored(tree, tmp_path):
    folder = make()
    upload.put_tree(folder, tree)
    out = tmp_path / "out"
    assert download.get(reopen(folder), "", out) == 3
    for path in tree.rglob("*"):
        if path.is_file():
            assert sha(out / path.relative_to(tree)) == sha(path)
    objects = folder.store.objects  # type: ignore[attr-defined]
    assert all("secret" not in key and "sub dir" not in key for key in objects)
    assert not any(MARKER in blob for blob in objects.values())
    assert [e["name"] for e in reopen(folder).ls()] == ["empty.txt", "notes-secret.txt", "sub dir"]


def test_one_file_comes_back_alone(tree, tmp_path):
    folder = make()
    upload.put_file(folder, tree / "notes-secret.txt", "a/b/n.txt")
    assert download.get(reopen(folder), "a/b/n.txt", tmp_path / "n.txt") == 1
    assert (tmp_path / "n.txt").read_bytes() == MARKER * 50


def test_the_same_file_twice_stores_its_chunks_once(tree):
    folder, big = make(), tree / "sub dir" / "big-secret.bin"
    first = upload.put_file(folder, big, "one.bin")
    second = upload.put_file(folder, big, "two.bin")
    assert first.chunks_sent >= 20 and second.chunks_sent == 0
    assert second.chunks_reused == first.chunks_sent
    assert len(folder.store.chunk_names()) == first.chunks_sent


def test_a_one_byte_edit_of_a_large_file_sends_one_or_two_chunks(tmp_path):
    folder, path = make(), tmp_path / "big.bin"
    data = bytearray(random.Random(3).randbytes(8 * 1024 * 1024))
    path.write_bytes(bytes(data))
    upload.put_file(folder, path, "big.bin")
    data[4_000_000] ^= 0xFF
    path.write_bytes(bytes(data))
    again = upload.put_file(folder, path, "big.bin")
    assert 1 <= again.chunks_sent <= 2 and again.bytes_sent < 600 * 1024
    download.get(reopen(folder), "big.bin", tmp_path / "back.bin")
    assert (tmp_path / "back.bin").read_bytes() == bytes(data)


def test_no_dedup_across_folders(tree):
    a, b = make(), make()
    upload.put_tree(a, tree)
    upload.put_tree(b, tree)
    assert not a.store.chunk_names() & b.store.chunk_names()


def test_a_wrong_passphrase_opens_nothing_and_rotation_keeps_content(tree, tmp_path):
    folder = make()
    upload.put_tree(folder, tree)
    with pytest.raises(WrongKeyError):
        EncryptedFolder.open(folder.store, "alice", b"nope", Counters())
    before = dict(folder.store.objects)  # type: ignore[attr-defined]
    folder.rotate("alice", b"pw", b"new pw", CHEAP)
    with pytest.raises(WrongKeyError):
        EncryptedFolder.open(folder.store, "alice", b"pw", Counters())
    rotated = EncryptedFolder.open(folder.store, "alice", b"new pw", Counters())
    changed = {k for k, v in folder.store.objects.items() if before.get(k) != v}  # type: ignore[attr-defined]
    assert changed == {".hcenc"}  # nothing re-encrypted
    assert download.get(rotated, "", tmp_path / "out") == 3


def _some_chunk(folder: EncryptedFolder) -> str:
    return chunks.object_path(sorted(folder.store.chunk_names())[0])


def test_a_tampered_chunk_is_refused(tree, tmp_path):
    folder = make()
    upload.put_tree(folder, tree)
    rel = _some_chunk(folder)
    blob = bytearray(folder.store.objects[rel])  # type: ignore[attr-defined]
    blob[100] ^= 1
    folder.store.objects[rel] = bytes(blob)  # type: ignore[attr-defined]
    with pytest.raises(IntegrityError):
        download.get(reopen(folder), "", tmp_path / "out")


def test_a_swapped_chunk_is_refused(tree, tmp_path):
    folder = make()
    upload.put_tree(folder, tree)
    first, second = sorted(folder.store.chunk_names())[:2]
    objects = folder.store.objects  # type: ignore[attr-defined]
    objects[chunks.object_path(first)] = objects[chunks.object_path(second)]
    with pytest.raises(IntegrityError, match="swapped"):
        download.get(reopen(folder), "", tmp_path / "out")


def test_a_truncated_file_manifest_is_refused(tree, tmp_path):
    folder = make()
    upload.put_tree(folder, tree)
    stored = folder.stored("sub dir/big-secret.bin")
    objects = folder.store.objects  # type: ignore[attr-defined]
    objects[stored] = objects[stored][:-40]
    with pytest.raises(IntegrityError):
        download.get(reopen(folder), "", tmp_path / "out")


def test_a_rolled_back_listing_is_refused_by_a_client_that_saw_the_newer(tree, tmp_path):
    counters = Counters(tmp_path / "counters.json")
    folder = make(counters=counters)
    upload.put_file(folder, tree / "empty.txt", "one.txt")
    old_map = folder.store.objects[".hcdir"]  # type: ignore[attr-defined]
    upload.put_file(folder, tree / "empty.txt", "two.txt")
    folder.store.objects[".hcdir"] = old_map  # type: ignore[attr-defined]
    with pytest.raises(RollbackError):
        reopen(folder, Counters(tmp_path / "counters.json")).ls()  # remembered across runs
    assert [e["name"] for e in reopen(folder).ls()] == ["one.txt"]  # a fresh client cannot tell


def test_a_replayed_file_manifest_is_refused_even_by_a_fresh_client(tmp_path):
    folder, path = make(), tmp_path / "f.txt"
    path.write_bytes(b"version one")
    upload.put_file(folder, path, "f.txt")
    old = folder.store.objects[folder.stored("f.txt")]  # type: ignore[attr-defined]
    path.write_bytes(b"version two")
    upload.put_file(folder, path, "f.txt")
    folder.store.objects[folder.stored("f.txt")] = old  # type: ignore[attr-defined]
    with pytest.raises(RollbackError):
        download.get(reopen(folder), "f.txt", tmp_path / "back.txt")  # its folder lists version 2


def test_sync_sends_what_changed_and_removes_what_is_gone(tree, tmp_path):
    folder = make()
    upload.put_tree(folder, tree, delete=True)
    (tree / "notes-secret.txt").unlink()
    (tree / "sub dir" / "new.txt").write_bytes(os.urandom(100))
    result = upload.put_tree(folder, tree, delete=True)
    assert (result.files, result.unchanged) == (1, 2)
    assert [e["name"] for e in reopen(folder).ls()] == ["empty.txt", "sub dir"]
    assert folder.stored("notes-secret.txt") not in folder.store.objects  # type: ignore[attr-defined]
    assert download.get(reopen(folder), "", tmp_path / "out") == 3
