"""Tree construction follows eq. 9 and 10, from listings and from a local directory."""

import hashlib
import os

import pytest

from hycloud_core.merkle import (
    DirEntry,
    FileEntry,
    Tombstone,
    build_tree,
    compare,
    entries_from_directory,
    normalise_path,
    tree_from_directory,
)


def md5(*parts: bytes) -> bytes:
    return hashlib.md5(b"".join(parts)).digest()


def sha(data: bytes) -> bytes:
    """The content hash of content.py for a file under 8 MiB: sha256 of its one part's sha256."""
    return hashlib.sha256(hashlib.sha256(data).digest()).digest()


def folder(*children: tuple[bytes, bytes]) -> bytes:
    """A folder's hash: its live children's names and hashes, in name order."""
    return md5(b"D", *(name + b"\0" + digest for name, digest in sorted(children)))


def test_hashes_follow_equations_9_and_10_with_names_at_the_parent():
    tree = build_tree(
        {
            "/d/f.txt": FileEntry.of(b"hello", 1.0),
            "/d/big.bin": FileEntry.of(b"large", 2.0, (b"B0", b"B1", b"B2")),
            "/d/sub": DirEntry(3.0),
            "/d/z": Tombstone(4.0),
        }
    )
    f = md5(b"F", sha(b"hello"))
    big = md5(md5(b"F", sha(b"large")), b"B0", b"B1", b"B2")
    sub = md5(b"D")  # an empty directory
    d = folder((b"big.bin", big), (b"f.txt", f), (b"sub", sub))  # marks add nothing
    root = folder((b"d", d))
    node_d = tree.children["/d"]
    assert node_d.children["/d/f.txt"].hash == f
    assert node_d.children["/d/big.bin"].hash == big
    assert node_d.children["/d/sub"].hash == sub
    assert node_d.hash == d and tree.hash == root
    assert [c.hash for c in node_d.children["/d/big.bin"].children.values()] == [b"B0", b"B1", b"B2"]
    assert node_d.mtime == 4.0 and tree.height() == 4


def test_empty_tree_is_the_empty_folder_hash():
    assert build_tree({}).hash == md5(b"D")


def test_a_move_keeps_every_hash_below_and_changes_the_parents():
    a = build_tree({"/x/f": FileEntry.of(b"same", 1.0), "/x/s/g": FileEntry.of(b"g", 1.0)})
    b = build_tree({"/y/f": FileEntry.of(b"same", 1.0), "/y/s/g": FileEntry.of(b"g", 1.0)})
    assert a.children["/x"].children["/x/f"].hash == b.children["/y"].children["/y/f"].hash
    assert a.children["/x"].hash == b.children["/y"].hash  # the folder's own name is its parent's
    assert a.hash != b.hash
    renamed = build_tree({"/x/f2": FileEntry.of(b"same", 1.0), "/x/s/g": FileEntry.of(b"g", 1.0)})
    assert renamed.children["/x"].hash != a.children["/x"].hash


def test_live_entry_supersedes_tombstone_and_marks_imply_parents():
    tree = build_tree({"a": Tombstone(1.0), "a/b": FileEntry.of(b"b", 2.0), "c/d": Tombstone(3.0)})
    assert tree.children["/a"].kind == "dir"
    assert tree.children["/c"].kind == "dir" and tree.children["/c"].children["/c/d"].kind == "tombstone"


@pytest.mark.parametrize("bad", [{"/f": FileEntry.of(b"", 0.0), "/f/g": DirEntry()}, {"/": Tombstone(1.0)}])
def test_impossible_listings_are_refused(bad):
    with pytest.raises(ValueError):
        build_tree(bad)


@pytest.mark.parametrize(("raw", "norm"), [("a/b", "/a/b"), ("/a//b/", "/a/b"), ("./a", "/a"), ("", "/")])
def test_normalise_path(raw, norm):
    assert normalise_path(raw) == norm


def test_normalise_path_refuses_escapes():
    with pytest.raises(ValueError):
        normalise_path("/a/../b")


def test_tree_from_directory_matches_listing(tmp_path):
    (tmp_path / "docs" / "empty").mkdir(parents=True)
    (tmp_path / "docs" / "a.txt").write_bytes(b"alpha")
    (tmp_path / "b.bin").write_bytes(os.urandom(3 << 20))
    (tmp_path / "link").symlink_to(tmp_path / "b.bin")
    listing = {
        "/docs/a.txt": FileEntry.of(b"alpha", (tmp_path / "docs" / "a.txt").stat().st_mtime),
        "/b.bin": FileEntry.of((tmp_path / "b.bin").read_bytes(), (tmp_path / "b.bin").stat().st_mtime),
        "/docs/empty": DirEntry(),
    }
    on_disk = tree_from_directory(tmp_path)
    assert on_disk.hash == build_tree(listing).hash
    assert set(entries_from_directory(tmp_path)) == {"/", "/docs", "/docs/a.txt", "/docs/empty", "/b.bin"}

    (tmp_path / "docs" / "a.txt").write_bytes(b"changed")
    (tmp_path / "b.bin").unlink()
    changed = tree_from_directory(tmp_path, tombstones={"b.bin": Tombstone(9e9)})
    assert {(d.path, d.action) for d in compare(changed, on_disk)} == {
        ("/docs/a.txt", "push"),
        ("/b.bin", "delete_remote"),
    }
