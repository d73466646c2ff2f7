"""The scan's folders as the one-round exchange reads them (merkle/sketch.py's LocalFolders).

Every folder's hash comes from its files' Merkle hashes and its subfolders' hashes, and each file's
sketch entry from what the scan journal kept, without a node per file: the nodes of a folder's
children are made only for the few folders the cloud says differ. On a tree of 100,000 files the
request is then a pass over the names, not a tree of 100,000 objects.
"""

from __future__ import annotations

from collections import defaultdict

from hycloud_core.merkle.hashing import dir_hash, file_hash
from hycloud_core.merkle.sketch import full_path, named
from hycloud_core.merkle.tree import Node

from .scan import LocalFile, LocalTree


def leaf(path: str, digest: bytes, mtime: float) -> Node:
    """Node(path, "file", digest, mtime), made without the frozen dataclass's checked __init__:
    a third of the time, for the tens of thousands of files of a large tree."""
    node = object.__new__(Node)
    node.__dict__.update(path=path, kind="file", hash=digest, mtime=mtime, children={}, index=None)
    return node


def rel_path(root: str, path: str) -> str:
    return path[len(root) :].lstrip("/") if root != "/" else path.lstrip("/")


def _below(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel else name


def merkle(f: LocalFile) -> bytes:
    return f.merkle or file_hash(bytes.fromhex(f.content_hash))


class ScannedFolders:
    """The folders of a scan of the local root, at their paths below the remote `root`."""

    def __init__(self, root: str, local: LocalTree) -> None:
        self.root = root
        self.files: dict[str, list[tuple[str, LocalFile]]] = defaultdict(list)  # by folder, unsorted
        self.dirs: dict[str, list[str]] = defaultdict(list)
        for rel, f in local.files.items():
            folder, _, name = rel.rpartition("/")
            self.files[folder].append((name, f))
        for rel in local.dirs:
            folder, _, name = rel.rpartition("/")
            self.dirs[folder].append(name)
        self.hashes: dict[str, tuple[bytes, float]] = {}  # folder (rel) -> its hash and mtime

    def folders(self, scope: str) -> list[tuple[str, bytes, list[bytes]]]:
        if scope != self.root:
            raise ValueError(f"the scan is of {self.root}, not {scope}")
        out: list[tuple[str, bytes, list[bytes]]] = []
        self._folder("", out)
        return sorted(out, key=lambda f: f[0])

    def _folder(self, rel: str, out: list[tuple[str, bytes, list[bytes]]]) -> tuple[bytes, float]:
        """Hash and mtime of the folder at `rel`, after its subfolders'; its facts added to `out`."""
        files = sorted(self.files.get(rel, ()), key=lambda nf: nf[0])
        hashes = [merkle(f) for _, f in files]
        entries = [
            f.named if f.merkle and f.named else named(n, h) for (n, f), h in zip(files, hashes, strict=True)
        ]
        kids = [(n, h) for (n, _), h in zip(files, hashes, strict=True)]
        mtime = max((f.mtime for _, f in files), default=0.0)
        for name in self.dirs.get(rel, ()):
            digest, when = self._folder(_below(rel, name), out)
            kids.append((name, digest))
            mtime = max(mtime, when)
        self.hashes[rel] = (dir_hash(kids), max(mtime, 0.0))
        out.append((full_path(self.root, rel), self.hashes[rel][0], entries))
        return self.hashes[rel]

    def node(self, path: str) -> Node:
        rel = rel_path(self.root, path)
        digest, mtime = self.hashes[rel]
        kids = [
            leaf(full_path(self.root, _below(rel, n)), merkle(f), f.mtime) for n, f in self.files.get(rel, ())
        ]
        for name in self.dirs.get(rel, ()):
            sub = _below(rel, name)
            kids.append(Node(full_path(self.root, sub), "dir", *self.hashes[sub]))
        return Node(path, "dir", digest, mtime, {n.path: n for n in sorted(kids, key=lambda n: n.path)})
