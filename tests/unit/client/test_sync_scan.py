"""The incremental local scan (sync/scan.py): files are read only when their size or mtime moved,
and the Merkle tree built from a scan is build_tree's."""

from __future__ import annotations

import os

from hycloud.sync.diff import full_path, local_merkle_tree
from hycloud.sync.filters import PathFilter
from hycloud.sync.local_folders import ScannedFolders
from hycloud.sync.scan import LocalFile, LocalTree, scan
from hycloud.sync.state import SyncState
from hycloud_core import content
from hycloud_core.merkle import DirEntry, FileEntry, build_tree
from hycloud_core.merkle.exchange import NodeSummary
from hycloud_core.merkle.sketch import NodeFolders, SketchExchange
from tests.unit.client.scan_files import count_reads as _reads
from tests.unit.client.scan_files import write_at as _write

OLD = 1_600_000_000  # mtimes long past: outside the racy window


def test_only_files_whose_mtime_or_size_moved_are_read(tmp_path, monkeypatch):
    root, state = tmp_path / "tree", SyncState("p", tmp_path / "state.sqlite3")
    _write(root / "same.txt", b"unchanged", OLD)
    _write(root / "d" / "edited.txt", b"before", OLD)
    read = _reads(monkeypatch)
    first = scan(root, state, PathFilter.of())
    assert sorted(read) == ["edited.txt", "same.txt"] and first.hashed == 2
    read.clear()
    _write(root / "d" / "edited.txt", b"after!", OLD + 60)  # same size, new mtime
    again = scan(root, state, PathFilter.of())
    assert read == ["edited.txt"] and again.hashed == 1
    assert again.files["d/edited.txt"].content_hash == content.hash_bytes(b"after!")
    assert again.files["same.txt"].content_hash == content.hash_bytes(b"unchanged")
    read.clear()
    assert scan(root, state, PathFilter.of()).hashed == 0 and read == []


def test_a_file_hashed_within_its_mtime_tick_is_read_again(tmp_path, monkeypatch):
    """Written twice in one mtime tick at one size, a kept hash would be stale: it is not kept."""
    root, state = tmp_path / "tree", SyncState("p", tmp_path / "state.sqlite3")
    (root).mkdir()
    (root / "hot.txt").write_bytes(b"v1")
    read = _reads(monkeypatch)
    scan(root, state, PathFilter.of())
    st = (root / "hot.txt").stat()
    (root / "hot.txt").write_bytes(b"v2")
    os.utime(root / "hot.txt", ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime
    again = scan(root, state, PathFilter.of())
    assert read == ["hot.txt", "hot.txt"] and again.files["hot.txt"].content_hash == content.hash_bytes(b"v2")


def test_the_tree_of_a_scan_is_build_tree_s():
    local = LocalTree(dirs={"a", "a/b", "empty", "a/b.c"})
    for i, rel in enumerate(["top.txt", "a/x", "a/b/y", "a/b.c/z", "a/b0"]):
        local.files[rel] = LocalFile(1, float(i), content.hash_bytes(rel.encode()), 0o644)
    for root in ("/", "/p/q"):
        entries: dict = {root: DirEntry(), **{full_path(root, d): DirEntry() for d in local.dirs}}
        for rel, f in local.files.items():
            entries[full_path(root, rel)] = FileEntry(bytes.fromhex(f.content_hash), f.mtime)
        assert local_merkle_tree(root, local) == build_tree(entries)


def test_the_scans_folders_are_the_trees_folders_without_a_node_per_file():
    """What the one-round exchange sends from the scan (each folder's hash and files' sketch
    entries) is what it sends from the whole tree; a folder's node holds the same children."""
    local = LocalTree(dirs={"a", "a/b", "empty", "a/b.c"})
    for i, rel in enumerate(["top.txt", "a/x", "a/b/y", "a/b.c/z", "a/b0", "a/b/y2"]):
        local.files[rel] = LocalFile(1, float(i), content.hash_bytes(rel.encode()), 0o644)
    for root in ("/", "/p/q"):
        tree, scanned = NodeFolders(local_merkle_tree(root, local)), ScannedFolders(root, local)
        assert scanned.folders(root) == tree.folders(root)
        for path, _, _ in tree.folders(root):
            want, got = tree.node(path), scanned.node(path)
            assert (got.path, got.hash, got.mtime) == (want.path, want.hash, want.mtime)
            assert [_summary(c) for c in got.children.values()] == [
                _summary(c) for c in want.children.values()
            ]
        assert (
            SketchExchange(scanned, root).request()
            == SketchExchange(local_merkle_tree(root, local), root).request()
        )


def _summary(node) -> tuple:
    s = NodeSummary.of(node)
    return s.path, s.kind, s.hash, s.mtime
