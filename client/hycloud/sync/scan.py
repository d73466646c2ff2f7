"""The local side of a sync: every file's size, mtime and content hash, re-hashing only files
whose size or mtime changed since they were last hashed (or all of them with --checksum).

An unchanged file costs one stat (from `os.scandir`) and a lookup in the kept hashes, never a
read. A hash is kept only for a file whose mtime is at least RACY_NS old when it is read: a file
written again within the same mtime tick, at the same size, would otherwise keep a stale hash
(git's "racily clean" entries); such a file is simply read again by the next scan."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from hycloud_core import content

from .filters import PathFilter
from .state import SyncState

RACY_NS = 2_000_000_000  # a hash of a file changed this recently is not kept (2 s: coarse mtimes)


@dataclass(frozen=True, slots=True)
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
    seconds: float = 0.0  # the scan's own time


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
    hashed_before, files, folders = time.time_ns(), tree.files, [""]
    everything = keep.exclude is None
    while folders:
        prefix = folders.pop()
        with os.scandir(base + prefix) as entries:
            for entry in entries:
                rel = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    if everything or keep.keeps(rel, is_dir=True):
                        tree.dirs.add(rel)
                        folders.append(rel + "/")
                elif entry.is_file(follow_symlinks=False) and (everything or keep.keeps_file(rel)):
                    st = entry.stat(follow_symlinks=False)
                    known = cached.get(entry.path)
                    if known is not None and known[0] == st.st_size and known[1] == st.st_mtime_ns:
                        digest = known[2]  # unchanged: a stat, no read
                    else:
                        digest = content.hash_file(Path(entry.path))[0]
                        fresh.append((entry.path, st.st_size, st.st_mtime_ns, digest))
                    files[rel] = LocalFile(st.st_size, st.st_mtime, digest, st.st_mode & 0o777)
    tree.hashed = len(fresh)
    state.save_hashes(f for f in fresh if f[2] < hashed_before - RACY_NS)
    return tree


def remember_file(state: SyncState, local: Path, digest: str) -> LocalFile:
    """After writing `local` with known content: cache its hash so the next scan need not read it."""
    st = local.stat()
    if st.st_mtime_ns < time.time_ns() - RACY_NS:
        state.save_hashes([(str(local.resolve()), st.st_size, st.st_mtime_ns, digest)])
    return LocalFile(st.st_size, st.st_mtime, digest, st.st_mode & 0o777)
