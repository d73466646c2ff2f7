"""A user's Merkle tree recomputed from the namespace on EFS, the source of truth.

Upkeep compares it with the hashes kept in DynamoDB (store/merkle_records.py) and repairs
them; tests use it as the reference. Files hash by the content hash of content.py: a link
file names it, a small file's bytes give it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from .. import content
from ..errors import NotFoundError
from ..linkfile import LinkFile, is_link_mode
from ..merkle import DirEntry, Entry, FileEntry, Node, build_tree, entries_from_directory
from ..merkle.tree import content_digest_file
from ..store.merkle_records import MerkleRecords
from .namespace import TMP_PREFIX, Namespace
from .segments_format import stub_from_bytes


def namespace_file(path: Path, st: os.stat_result) -> FileEntry | None:
    """A namespace file's entry; temporary files of unfinished writes are not part of the tree."""
    if path.name.startswith(TMP_PREFIX):
        return None
    if is_link_mode(st.st_mode):
        raw = path.read_bytes()
        if stub := stub_from_bytes(raw):  # a packed small file: its hash is in the stub
            return FileEntry(bytes.fromhex(stub.content_hash), st.st_mtime)
        link = LinkFile.from_bytes(raw)
        return FileEntry(bytes.fromhex(link.content_hash), link.mtime)
    return FileEntry(content_digest_file(path), st.st_mtime)


def namespace_entries(ns: Namespace, known: dict[str, tuple[int, str]] | None = None) -> dict[str, Entry]:
    """The namespace's listing; `known` ({path: (size, sha256 hex)}, from file records just checked
    against EFS) spares reading small files of that size again."""
    if not known:
        return entries_from_directory(ns.root, namespace_file)

    def file_entry(path: Path, st: os.stat_result) -> FileEntry | None:
        rel = "/" + path.relative_to(ns.root).as_posix()
        size, sha = known.get(rel, (-1, ""))
        if is_link_mode(st.st_mode) or size != st.st_size or size > content.PART_SIZE:
            return namespace_file(path, st)
        return FileEntry(bytes.fromhex(content.hash_from_parts([bytes.fromhex(sha)])), st.st_mtime)

    return entries_from_directory(ns.root, file_entry)


def namespace_tree(ns: Namespace) -> Node:
    return build_tree(namespace_entries(ns))


def _efs_state(ns: Namespace, path: str) -> tuple[str, str, float]:
    """What EFS holds at `path` now: ("none"|"dir"|"file", content hash, mtime)."""
    try:
        entry = ns.stat(path)
    except NotFoundError:
        return "none", "", 0.0
    if entry.type == "dir":
        return "dir", "", entry.mtime
    digest = entry.content_hash if entry.storage == "large" else ns.stat_hashed(path).content_hash
    return "file", digest or "", entry.mtime


def _fix(ns: Namespace, tree: MerkleRecords, path: str, item: dict[str, Any] | None) -> bool:
    """Rewrite the node of `path` from EFS if it disagrees; True when it did."""
    kind, digest, mtime = _efs_state(ns, path)
    kept = "none" if item is None or item["kind"] == "tombstone" else item["kind"]
    if kind == kept and (kind != "file" or (item or {}).get("digest") == digest):
        return False
    if kind == "file":
        tree.file_written(path, digest, mtime)
    elif kind == "dir":
        tree.dir_made(path)
    else:
        tree.removed(path)
    return True


def rebuild(ns: Namespace, tree: MerkleRecords, known: dict[str, tuple[int, str]] | None = None) -> int:
    """Migrate a tree kept in the layout before folder ids: its nodes keyed by path dropped, every
    node written again from EFS in bulk, the layout marked; how many nodes were written. Each step
    can run again (a round cut short is done again by the next)."""
    tree.drop_path_layout()
    written = tree.write_tree(namespace_entries(ns, known))
    tree.mark_layout()
    return written


def repair(
    ns: Namespace,
    tree: MerkleRecords,
    lease: Callable[[str], AbstractContextManager[Any]],
    known: dict[str, tuple[int, str]] | None = None,
) -> list[str]:
    """Make the kept hashes agree with EFS (upkeep); the paths whose nodes were rewritten.

    A path found different is re-read under its lease (`lease(path)`) before it is rewritten,
    as file records are. Folder hashes that differ from EFS's are invalidated: invalidating is
    always safe, the route recomputes them. `known`: see namespace_entries.
    """
    entries = namespace_entries(ns, known)
    kept = {i["path"]: i for i in tree.items()}
    live = {p for p, i in kept.items() if i["kind"] != "tombstone"}
    fixed: list[str] = []
    gone: list[str] = []
    for path in sorted(set(entries) | live):
        if any(path.startswith(top.rstrip("/") + "/") for top in gone):
            continue  # below a folder removed in this pass
        entry, item = entries.get(path), kept.get(path)
        same = (
            isinstance(entry, FileEntry)
            and item is not None
            and item["kind"] == "file"
            and item.get("digest") == entry.content_hash.hex()
        ) or (isinstance(entry, DirEntry) and item is not None and item["kind"] == "dir")
        if same:
            continue
        with lease(path):
            if _fix(ns, tree, path, tree.get(path)):
                fixed.append(path)
                if entry is None:
                    gone.append(path)
    efs = build_tree(entries)
    stale = [
        n.path
        for n in efs.walk()
        if n.kind == "dir" and n.path in kept and kept[n.path].get("hash") not in (None, n.hash.hex())
    ]
    for path in sorted(stale, key=len, reverse=True):
        tree.invalidate([path])
        fixed.append(path)
    return fixed
