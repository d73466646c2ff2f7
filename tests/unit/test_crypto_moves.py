"""Copies and moves inside one encrypted folder (client/hycloud/encrypted/moves.py): no chunk is
read or sent, only manifests sealed for their new paths and name maps; the copy reads back byte
for byte, a move leaves no trace of the old name, and what cannot be done is refused first."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest

from hycloud.encrypted import EncryptedFolder, MemoryStore, download, files, moves, upload
from hycloud.encrypted.counters import Counters
from hycloud_core.crypto.errors import IntegrityError
from hycloud_core.errors import BadRequestError, ConflictError, NotFoundError
from tests.unit.test_crypto_folder import CHEAP, MARKER

BIG = random.Random(5).randbytes(600 * 1024) + MARKER


@pytest.fixture
def folder(tmp_path) -> EncryptedFolder:
    made = EncryptedFolder.create(MemoryStore(), "alice", b"pw", CHEAP, Counters())
    src = tmp_path / "src"
    (src / "docs" / "deep").mkdir(parents=True)
    (src / "docs" / "big-secret.bin").write_bytes(BIG)
    (src / "docs" / "deep" / "note-secret.txt").write_bytes(MARKER * 3)
    upload.put_tree(made, src)
    files.make_dir(made, "docs/empty")
    return made


def _read(folder: EncryptedFolder, rel: str) -> bytes:
    return files.read_bytes(folder, rel)


def _no_plaintext(folder: EncryptedFolder) -> None:
    objects = folder.store.objects  # type: ignore[attr-defined]
    assert not any(MARKER in blob for blob in objects.values())
    assert not any(word in key for key in objects for word in ("secret", "docs", "copy", "moved"))


def test_a_file_copy_sends_no_chunk_and_reads_back_byte_exact(folder):
    chunks_before = set(folder.store.chunk_names())
    sent_before = folder.store.sent  # type: ignore[attr-defined]
    done = moves.copy(folder, "docs/big-secret.bin", "copy/of-big.bin")
    assert done.files == 1 and done.chunks_reused >= 3
    assert folder.store.chunk_names() == chunks_before
    assert folder.store.sent - sent_before < 8 * 1024  # type: ignore[attr-defined]  # manifests and maps
    again = EncryptedFolder.open(folder.store, "alice", b"pw", Counters())
    assert _read(again, "copy/of-big.bin") == BIG
    assert _read(again, "docs/big-secret.bin") == BIG
    assert [e["name"] for e in again.ls()] == ["copy", "docs"]
    _no_plaintext(folder)


def test_a_folder_copy_keeps_its_tree_and_empty_folders(folder, tmp_path):
    done = moves.copy(folder, "docs", "copy")
    assert (done.files, done.folders) == (2, 3)
    out = tmp_path / "out"
    download.get(folder, "copy", out)
    assert (out / "big-secret.bin").read_bytes() == BIG
    assert (out / "deep" / "note-secret.txt").read_bytes() == MARKER * 3
    assert [e["name"] for e in folder.ls("copy")] == ["big-secret.bin", "deep", "empty"]
    _no_plaintext(folder)


def test_a_move_leaves_no_old_name_and_no_old_manifest(folder):
    old_stored = folder.stored("docs/big-secret.bin")
    moves.move(folder, "docs/big-secret.bin", "moved.bin")
    assert _read(folder, "moved.bin") == BIG
    assert folder.entry("docs/big-secret.bin") is None
    assert old_stored not in folder.store.objects  # type: ignore[attr-defined]
    with pytest.raises(NotFoundError):
        _read(folder, "docs/big-secret.bin")


def test_a_folder_moved_away_and_back_opens_again(folder):
    moves.move(folder, "docs", "moved")
    assert _read(folder, "moved/deep/note-secret.txt") == MARKER * 3
    moves.move(folder, "moved", "docs")  # the old maps are gone on purpose: no rollback error
    assert _read(folder, "docs/deep/note-secret.txt") == MARKER * 3
    assert [e["name"] for e in folder.ls()] == ["docs"]


def test_a_file_copied_over_another_replaces_it(folder):
    moves.copy(folder, "docs/deep/note-secret.txt", "docs/big-secret.bin")
    fresh = EncryptedFolder.open(folder.store, "alice", b"pw", folder.counters)
    assert _read(fresh, "docs/big-secret.bin") == MARKER * 3
    entry = fresh.entry("docs/big-secret.bin")
    assert entry is not None and entry["sha256"] == hashlib.sha256(MARKER * 3).hexdigest()


def test_refusals_come_before_any_write(folder):
    before = dict(folder.store.objects)  # type: ignore[attr-defined]
    with pytest.raises(NotFoundError):
        moves.copy(folder, "nothing.txt", "x.txt")
    with pytest.raises(BadRequestError):
        moves.copy(folder, "docs", "docs/inside")
    with pytest.raises(ConflictError, match="already exists"):
        moves.copy(folder, "docs/deep", "docs/empty")
    with pytest.raises(ConflictError, match="is a folder"):
        moves.copy(folder, "docs/big-secret.bin", "docs/deep")
    with pytest.raises(ConflictError, match="is a file"):
        moves.copy(folder, "docs/deep/note-secret.txt", "docs/big-secret.bin/under.txt")
    assert folder.store.objects == before  # type: ignore[attr-defined]


def test_an_empty_folder_is_replaced_by_a_move_as_posix_rename_does(folder):
    moves.move(folder, "docs/deep", "docs/empty", replace_dir=True)
    assert _read(folder, "docs/empty/note-secret.txt") == MARKER * 3
    with pytest.raises(ConflictError):
        moves.move(folder, "docs/empty", "docs", replace_dir=True)  # not empty, and itself


def test_a_tampered_source_manifest_is_refused_not_copied(folder):
    stored = folder.stored("docs/big-secret.bin")
    blob = bytearray(folder.store.objects[stored])  # type: ignore[attr-defined]
    blob[40] ^= 1
    folder.store.objects[stored] = bytes(blob)  # type: ignore[attr-defined]
    with pytest.raises(IntegrityError):
        moves.copy(folder, "docs/big-secret.bin", "copy.bin")
    assert folder.entry("copy.bin") is None


def test_the_copy_is_bound_to_its_own_path(folder):
    """A manifest is sealed for its path: the copy's object is not the source's bytes."""
    moves.copy(folder, "docs/big-secret.bin", "copy.bin")
    objects = folder.store.objects  # type: ignore[attr-defined]
    assert objects[folder.stored("copy.bin")] != objects[folder.stored("docs/big-secret.bin")]
    objects[folder.stored("copy.bin")] = objects[folder.stored("docs/big-secret.bin")]
    with pytest.raises(IntegrityError):
        _read(folder, "copy.bin")


def test_a_path_given_with_slashes_is_the_same_path(folder, tmp_path: Path):
    moves.copy(folder, "/docs/deep/", "/other/")
    assert _read(folder, "other/note-secret.txt") == MARKER * 3
