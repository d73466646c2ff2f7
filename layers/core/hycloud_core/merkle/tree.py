"""Merkle trees of a user's namespace, from an in-memory listing or a local directory."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from hycloud_core import content
from hycloud_core.merkle.entries import (
    DirEntry,
    Entry,
    FileEntry,
    Tombstone,
    normalise_path,
    parent_of,
)
from hycloud_core.merkle.hashing import dir_hash, file_hash, name_of

Kind = Literal["dir", "file", "block", "tombstone"]
ROOT = "/"


def block_path(file_path: str, index: int) -> str:
    """Blocks sit one level below their file; "/#" cannot clash because a file has no children."""
    return f"{file_path}/#{index}"


@dataclass(frozen=True, eq=True)
class Node:
    """One element of the tree; `mtime` of a directory is the latest change anywhere below it."""

    path: str
    kind: Kind
    hash: bytes
    mtime: float
    children: dict[str, Node] = field(default_factory=dict)
    index: int | None = None  # block number, for kind == "block"

    @property
    def live(self) -> bool:
        return self.kind != "tombstone"

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children.values():
            yield from child.walk()

    def find(self, path: str) -> Node | None:
        """The node at `path` in this tree, if there is one."""
        node: Node | None = self
        target = normalise_path(path)
        while node is not None and node.path != target:
            here = node.path.rstrip("/")
            if not target.startswith(here + "/"):
                return None
            name = target[len(here) + 1 :].split("/", 1)[0]
            node = node.children.get(f"{here}/{name}")
        return node

    def height(self) -> int:
        """Number of levels, counting the root (a lone root has height 1)."""
        return 1 + max((c.height() for c in self.children.values()), default=0)


def _file_node(path: str, entry: FileEntry) -> Node:
    blocks = {
        block_path(path, i): Node(block_path(path, i), "block", h, entry.mtime, index=i)
        for i, h in enumerate(entry.blocks)
    }
    return Node(path, "file", file_hash(entry.content_hash, entry.blocks), entry.mtime, blocks)


def _tombstone_node(path: str, mark: Tombstone) -> Node:
    return Node(path, "tombstone", b"", mark.deleted_at)


def _layout(entries: Mapping[str, Entry]) -> tuple[dict[str, Entry], dict[str, list[str]]]:
    """Normalised entries with implied parent directories, and each directory's child paths."""
    norm: dict[str, Entry] = {}
    marks: dict[str, Tombstone] = {}
    for raw, entry in entries.items():
        path = normalise_path(raw)
        if path == ROOT and not isinstance(entry, DirEntry):
            raise ValueError("the root must be a directory")
        if isinstance(entry, Tombstone):
            marks[path] = entry
        else:
            norm[path] = entry
    for path in [*norm, *marks]:
        while path != ROOT:
            path = parent_of(path)
            above = norm.get(path)
            if isinstance(above, FileEntry):
                raise ValueError(f"{path} is a file but has entries below it")
            if above is not None:
                break  # its own ancestors are added when it is visited
            norm[path] = DirEntry()
    for path, mark in marks.items():
        norm.setdefault(path, mark)  # a live entry at the same path supersedes the mark
    norm.setdefault(ROOT, DirEntry())
    children: dict[str, list[str]] = defaultdict(list)
    for path in norm:
        if path != ROOT:
            children[parent_of(path)].append(path)
    return norm, children


def build_tree(entries: Mapping[str, Entry]) -> Node:
    """The tree of a listing {path: FileEntry | DirEntry | Tombstone}; parents are implied."""
    norm, children = _layout(entries)

    def build(path: str) -> Node:
        entry = norm[path]
        if isinstance(entry, FileEntry):
            return _file_node(path, entry)
        if isinstance(entry, Tombstone):
            return _tombstone_node(path, entry)
        nodes = {p: build(p) for p in sorted(children.get(path, ()))}
        digest = dir_hash((name_of(p), n.hash) for p, n in nodes.items() if n.live)
        mtime = max((n.mtime for n in nodes.values()), default=entry.mtime)
        return Node(path, "dir", digest, max(mtime, entry.mtime), nodes)

    return build(ROOT)


def content_digest_file(path: Path) -> bytes:
    """The file's content hash as the cloud records it (content.py), so both sides hash alike."""
    return bytes.fromhex(content.hash_file(path)[0])


def _default_file_entry(path: Path, st: os.stat_result) -> FileEntry:
    return FileEntry(content_digest_file(path), st.st_mtime)


def _mounted(prefix: str, rel: str) -> str:
    """`rel` ("/" or "/x/y") as a path below `prefix`, the remote folder a local one stands for."""
    prefix = normalise_path(prefix)
    if rel == ROOT:
        return prefix
    return rel if prefix == ROOT else prefix + rel


def entries_from_directory(
    root: str | os.PathLike[str],
    file_entry: Callable[[Path, os.stat_result], FileEntry | None] = _default_file_entry,
    prefix: str = ROOT,
) -> dict[str, Entry]:
    """Listing of a local directory; `file_entry` lets an instance turn link files into coded entries.

    Symbolic links are skipped: the namespace holds regular files and directories only. With
    `prefix`, the directory stands for that remote folder: paths are the remote ones.
    """
    base = Path(root)
    out: dict[str, Entry] = {_mounted(prefix, ROOT): DirEntry(base.stat().st_mtime)}
    stack = [base]
    while stack:
        current = stack.pop()
        with os.scandir(current) as it:
            for item in it:
                rel = _mounted(prefix, "/" + Path(item.path).relative_to(base).as_posix())
                if item.is_symlink():
                    continue
                st = item.stat()
                if item.is_dir():
                    out[rel] = DirEntry(st.st_mtime)
                    stack.append(Path(item.path))
                elif item.is_file() and (entry := file_entry(Path(item.path), st)) is not None:
                    out[rel] = entry
    return out


def tree_from_directory(
    root: str | os.PathLike[str],
    tombstones: Mapping[str, Tombstone] | None = None,
    file_entry: Callable[[Path, os.stat_result], FileEntry | None] = _default_file_entry,
    prefix: str = ROOT,
) -> Node:
    """The tree of a local directory, plus the deletion marks the caller keeps (its delete log).

    The tree's root is always "/": with `prefix` the directory sits at that path inside it
    (see `find`); its hashes are those of any folder holding the same files.
    """
    entries = entries_from_directory(root, file_entry, prefix)
    for path, mark in (tombstones or {}).items():
        entries.setdefault(normalise_path(path), mark)
    return build_tree(entries)
