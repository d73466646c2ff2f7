"""The local side of a sync: every file's size, mtime and content hash, re-hashing only files
whose size or mtime changed since they were last hashed (or all of them with --checksum)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from hycloud_core import content

from .filters import PathFilter
from .state import SyncState


@dataclass(frozen=True)
class LocalFile:
    size: int
    mtime: float
    content_hash: str
    mode: int


@dataclass
class LocalTree:
    """Files and folders under the local root, keyed by POSIX path relative to it ("a/b.txt")."""

    files: dict[str, LocalFile] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    hashed: int = 0  # files whose content had to be read


def scan(root: Path, state: SyncState, keep: PathFilter, checksum: bool = False) -> LocalTree:
    """One pass of `os.scandir` (its entries carry the type, so only files need a stat); a file's
    cache key is the resolved root joined with its relative path, as `resolve()` gives for a
    tree whose symlinks are skipped."""
    tree = LocalTree()
    if not root.is_dir():
        return tree
    base = str(root.resolve()).rstrip("/") + "/"
    cached = {} if checksum else state.cached_hashes(root)
    fresh: list[tuple[str, int, int, str]] = []
    folders = [""]
    while folders:
        prefix = folders.pop()
        with os.scandir(base + prefix) as entries:
            for entry in entries:
                rel = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    if keep.keeps(rel, is_dir=True):
                        tree.dirs.add(rel)
                        folders.append(rel + "/")
                elif entry.is_file(follow_symlinks=False) and keep.keeps_file(rel):
                    _add_file(tree, base + rel, rel, entry.stat(follow_symlinks=False), cached, fresh)
    state.save_hashes(fresh)
    tree.hashed = len(fresh)
    return tree


def _add_file(
    tree: LocalTree,
    local: str,
    rel: str,
    st: os.stat_result,
    cached: dict[str, tuple[int, int, str]],
    fresh: list[tuple[str, int, int, str]],
) -> None:
    """The file's content hash from the cache when its size and mtime are unchanged, else read."""
    known = cached.get(local)
    if known is not None and known[:2] == (st.st_size, st.st_mtime_ns):
        digest = known[2]
    else:
        digest = content.hash_file(Path(local))[0]
        fresh.append((local, st.st_size, st.st_mtime_ns, digest))
    tree.files[rel] = LocalFile(st.st_size, st.st_mtime, digest, stat.S_IMODE(st.st_mode) & 0o777)


def remember_file(state: SyncState, local: Path, digest: str) -> LocalFile:
    """After writing `local` with known content: cache its hash so the next scan need not read it."""
    st = local.stat()
    state.save_hashes([(str(local.resolve()), st.st_size, st.st_mtime_ns, digest)])
    return LocalFile(st.st_size, st.st_mtime, digest, stat.S_IMODE(st.st_mode) & 0o777)
