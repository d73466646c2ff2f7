"""The scan journal (sync/journal.py): a scan after it lists no unchanged folder and reads no
unchanged file, yet finds an edit, a new file, a delete, a rename and an edit that kept the mtime;
--rescan/--checksum (an empty journal) walk everything again."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from hycloud.sync import journal as journals
from hycloud.sync import local_folders
from hycloud.sync import scan as scan_module
from hycloud.sync.diff import local_merkle_tree, merkle_of
from hycloud.sync.filters import PathFilter
from hycloud.sync.local_folders import ScannedFolders
from hycloud.sync.scan import LocalTree, scan
from hycloud.sync.state import SyncState
from hycloud_core import content
from hycloud_core.merkle import sketch
from tests.unit.client.scan_files import count_reads
from tests.unit.client.scan_files import write_at as _write

OLD = 1_600_000_000  # mtimes long past: outside the racy window
REMOTE = "/r"


@pytest.fixture(autouse=True)
def short_racy_window(monkeypatch):
    """Files here were made a moment ago (their ctimes cannot be set back): a 10 ms window, and
    each test's tree older than it, stand for the 2 s one and a tree made long ago."""
    monkeypatch.setattr(scan_module, "RACY_NS", 10_000_000)


@pytest.fixture
def tree(tmp_path) -> Path:
    root = tmp_path / "tree"
    for rel in ("a.txt", "d/b.txt", "d/e/c.txt", "f/x.txt"):
        _write(root / rel, rel.encode() * 3, OLD)
    for folder in (root / "d" / "e", root / "d", root / "f", root):
        os.utime(folder, (OLD, OLD))  # folders unchanged long since: their listings are trusted
    time.sleep(0.03)
    return root


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    return count_reads(monkeypatch)


def _scan(root: Path, state: SyncState, fresh: bool = False) -> LocalTree:
    path = journals.journal_path(state.path, state.pair)
    key = journals.journal_key(REMOTE, (), ())
    journal = journals.Journal(path, key) if fresh else journals.load(path, key)
    return scan(root, state, PathFilter.of(), journal=journal, remote_root=REMOTE)


def _hashes(local: LocalTree) -> dict[str, str]:
    return {rel: f.content_hash for rel, f in local.files.items()}


def _truth(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): content.hash_bytes(p.read_bytes())
        for p in root.rglob("*")
        if p.is_file()
    }


def _settled(tmp_path: Path, root: Path, reads: list[str]) -> SyncState:
    state = SyncState("p", tmp_path / "state.sqlite3")
    first = _scan(root, state)
    assert first.hashed == 4 and first.listed == 4
    reads.clear()
    return state


def test_nothing_changed_lists_no_folder_and_reads_no_file(tmp_path, tree, reads):
    state = _settled(tmp_path, tree, reads)
    again = _scan(tree, state)
    assert (again.hashed, again.listed, reads) == (0, 0, [])
    assert _hashes(again) == _truth(tree) and again.dirs == {"d", "d/e", "f"}
    for f in again.files.values():  # the Merkle hashes the journal kept are the right ones
        assert f.merkle.hex() == merkle_of(f.content_hash)


def test_an_edit_in_place_is_read_though_its_folder_did_not_change(tmp_path, tree, reads):
    state = _settled(tmp_path, tree, reads)
    _write(tree / "d/e/c.txt", b"edited in place", OLD + 10)
    again = _scan(tree, state)
    assert reads == ["c.txt"] and again.listed == 0 and _hashes(again) == _truth(tree)
    assert again.files["d/e/c.txt"].merkle.hex() == merkle_of(_truth(tree)["d/e/c.txt"])


def test_a_new_file_and_a_delete_are_found_by_listing_only_their_folders(tmp_path, tree, reads):
    state = _settled(tmp_path, tree, reads)
    _write(tree / "d/new.txt", b"new", OLD)
    (tree / "f/x.txt").unlink()
    again = _scan(tree, state)
    assert reads == ["new.txt"] and again.listed == 2  # d and f; the root and d/e not
    assert _hashes(again) == _truth(tree) and "f/x.txt" not in again.files


def test_a_renamed_folder_is_found_and_its_files_not_read_again(tmp_path, tree, reads):
    state = _settled(tmp_path, tree, reads)
    (tree / "d").rename(tree / "moved")
    again = _scan(tree, state)
    assert sorted(again.files) == ["a.txt", "f/x.txt", "moved/b.txt", "moved/e/c.txt"]
    assert reads == [] and _hashes(again) == _truth(tree)  # same inodes, untouched: hashes carried
    assert again.files["moved/b.txt"].merkle.hex() == merkle_of(_truth(tree)["moved/b.txt"])


def test_a_renamed_file_is_found(tmp_path, tree, reads):
    state = _settled(tmp_path, tree, reads)
    (tree / "d/b.txt").rename(tree / "d/b2.txt")
    again = _scan(tree, state)
    assert "d/b.txt" not in again.files and _hashes(again) == _truth(tree)
    assert reads in ([], ["b2.txt"])  # read again where a rename moves the file's ctime (ext4, tmpfs)


def test_an_edit_that_kept_its_mtime_is_found_by_its_size(tmp_path, tree, reads):
    state = _settled(tmp_path, tree, reads)
    _write(tree / "a.txt", b"a much longer text than before", OLD)  # mtime set back as it was
    again = _scan(tree, state)
    assert reads == ["a.txt"] and _hashes(again) == _truth(tree)


def test_an_edit_that_kept_its_mtime_and_size_is_found_by_its_ctime(tmp_path, tree, reads):
    """Setting the mtime back moves the ctime, which the journal compares too."""
    state = _settled(tmp_path, tree, reads)
    before = (tree / "a.txt").read_bytes()
    _write(tree / "a.txt", bytes(reversed(before)), OLD)
    assert (tree / "a.txt").stat().st_size == len(before)
    again = _scan(tree, state)
    assert reads == ["a.txt"] and _hashes(again) == _truth(tree)


def test_an_empty_journal_walks_everything_again(tmp_path, tree, reads):
    """What --rescan does: every folder listed; hashes still taken from the state store."""
    state = _settled(tmp_path, tree, reads)
    again = _scan(tree, state, fresh=True)
    assert again.listed == 4 and again.hashed == 0 and _hashes(again) == _truth(tree)


def test_a_journal_for_other_filters_or_root_is_not_used(tmp_path, tree, reads):
    state = _settled(tmp_path, tree, reads)
    path = journals.journal_path(state.path, state.pair)
    assert journals.load(path, journals.journal_key(REMOTE, (), ())).files
    assert not journals.load(path, journals.journal_key("/other", (), ())).files
    assert not journals.load(path, journals.journal_key(REMOTE, ("*.txt",), ())).files
    path.write_bytes(b"not a journal")
    assert not journals.load(path, journals.journal_key(REMOTE, (), ())).files


def test_the_tree_from_journal_hashes_is_the_tree_from_content(tmp_path, tree, reads):
    state = _settled(tmp_path, tree, reads)
    kept = _scan(tree, state)
    plain = scan(tree, SyncState("q", tmp_path / "other.sqlite3"), PathFilter.of())
    assert local_merkle_tree(REMOTE, kept) == local_merkle_tree(REMOTE, plain)


def test_the_sketch_from_kept_entries_is_the_sketch_from_hashes(tmp_path, tree, reads, monkeypatch):
    """The exchange's request is built from the sketch entries the journal kept: no file's entry
    computed again, the same bytes as from the hashes."""
    state = _settled(tmp_path, tree, reads)
    _write(tree / "d/e/c.txt", b"edited", OLD + 5)  # one entry computed afresh, by the scan
    kept = _scan(tree, state)
    want = sketch.SketchExchange(local_merkle_tree(REMOTE, kept), REMOTE).request()
    monkeypatch.setattr(local_folders, "named", lambda *_: pytest.fail("a kept entry computed again"))
    assert sketch.SketchExchange(ScannedFolders(REMOTE, kept), REMOTE).request() == want
