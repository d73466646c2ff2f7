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
    tree = LocalTree()
    if not root.is_dir():
        return tree
    cached = {} if checksum else state.cached_hashes(root)
    fresh: list[tuple[str, int, int, str]] = []
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        rel_here = here.relative_to(root).as_posix()
        prefix = "" if rel_here == "." else rel_here + "/"
        for name in list(dirs):
            item = here / name
            if item.is_symlink() or not keep.keeps(prefix + name, is_dir=True):
                dirs.remove(name)
            else:
                tree.dirs.add(prefix + name)
        for name in files:
            rel, item = prefix + name, here / name
            if item.is_symlink() or not keep.keeps_file(rel):
                continue
            st = item.stat()
            if not stat.S_ISREG(st.st_mode):
                continue
            known = cached.get(str(item.resolve()))
            if known is not None and known[:2] == (st.st_size, st.st_mtime_ns):
                digest = known[2]
            else:
                digest = content.hash_file(item)[0]
                fresh.append((str(item.resolve()), st.st_size, st.st_mtime_ns, digest))
            tree.files[rel] = LocalFile(st.st_size, st.st_mtime, digest, stat.S_IMODE(st.st_mode) & 0o777)
    state.save_hashes(fresh)
    tree.hashed = len(fresh)
    return tree


def remember_file(state: SyncState, local: Path, digest: str) -> LocalFile:
    """After writing `local` with known content: cache its hash so the next scan need not read it."""
    st = local.stat()
    state.save_hashes([(str(local.resolve()), st.st_size, st.st_mtime_ns, digest)])
    return LocalFile(st.st_size, st.st_mtime, digest, stat.S_IMODE(st.st_mode) & 0o777)
