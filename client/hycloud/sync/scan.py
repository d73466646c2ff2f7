"""The local side of a sync: every file's size, mtime and content hash, re-hashing only files
whose size or mtime changed since they were last hashed (or all of them with --checksum).

An unchanged file costs one stat and a lookup, never a read. With a scan journal (journal.py,
one per sync pair) an unchanged folder is not listed again and an unchanged file's Merkle hash
is not recomputed either; without one (or for a file the journal lacks) the content hashes kept
in the state store by path, size and mtime are used. A hash is kept only for a file whose mtime
is at least RACY_NS old when it is read: a file written again within the same mtime tick, at the
same size, would otherwise keep a stale hash (git's "racily clean" entries); such a file is
simply read again by the next scan."""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from hycloud_core import content
from hycloud_core.merkle.hashing import file_hash
from hycloud_core.merkle.sketch import named

from . import journal as journals
from .filters import PathFilter
from .state import SyncState

RACY_NS = 2_000_000_000  # a hash of a file changed this recently is not kept (2 s: coarse mtimes)


class LocalFile(NamedTuple):
    """One local file as the scan saw it (a named tuple: made once per file of a large tree)."""

    size: int
    mtime: float
    content_hash: str
    mode: int
    merkle: bytes = b""  # the file's Merkle hash at LocalTree.merkle_root, when the scan knew it
    named: bytes = b""  # what the exchange's sketch takes a prefix of (sketch.named), when known


@dataclass
class LocalTree:
    """Files and folders under the local root, keyed by POSIX path relative to it ("a/b.txt")."""

    files: dict[str, LocalFile] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    hashed: int = 0  # files whose content had to be read
    listed: int = 0  # folders whose entries had to be listed (not taken from the journal)
    seconds: float = 0.0  # the scan's own time
    merkle_root: str | None = None  # the remote root the files' `merkle` hashes are at


def scan(
    root: Path,
    state: SyncState,
    keep: PathFilter,
    checksum: bool = False,
    journal: journals.Journal | None = None,
    remote_root: str | None = None,
) -> LocalTree:
    """One walk of the tree: a stat per folder and per file; folders listed (`os.scandir`) and
    files read only where the journal (or the kept hashes) cannot vouch for them. A file's kept
    hash is keyed by the resolved root joined with its relative path, as `resolve()` gives for
    a tree whose symlinks are skipped. With `remote_root`, each file's Merkle hash there is
    recorded too (the journal's key must name the same root)."""
    tree = LocalTree(merkle_root=remote_root)
    if not root.is_dir():
        return tree
    walk = _Walk(str(root.resolve()).rstrip("/") + "/", state, keep, checksum, journal, remote_root)
    walk.run(tree)
    tree.hashed, tree.listed = len(walk.fresh), walk.listed
    state.save_hashes(f for f in walk.fresh if f[2] < walk.cutoff)
    if journal is not None and walk.differs():
        journal.files, journal.dirs = walk.files, walk.dirs
        journals.save(journal)
    return tree


class _Walk:
    """The walk's state: the journal it reads, the one it writes, the files it had to read."""

    def __init__(
        self,
        base: str,
        state: SyncState,
        keep: PathFilter,
        checksum: bool,
        journal: journals.Journal | None,
        remote_root: str | None,
    ) -> None:
        self.base, self.state, self.keep, self.checksum = base, state, keep, checksum
        self.old = journal if journal is not None and not checksum else journals.Journal(None, "")
        self.remote = None if remote_root is None else remote_root.rstrip("/") + "/"
        self.files: dict[str, journals.FileRow] = {}
        self.dirs: dict[str, journals.DirRow] = {}
        self.fresh: list[tuple[str, int, int, str]] = []
        self.cutoff = time.time_ns() - RACY_NS  # older mtimes than this are recorded
        self.listed, self.changed = 0, False
        self._kept_hashes: dict[str, tuple[int, int, str]] | None = None

    def differs(self) -> bool:
        """Whether the journal must be written again."""
        return self.changed or len(self.files) != len(self.old.files) or len(self.dirs) != len(self.old.dirs)

    def run(self, tree: LocalTree) -> None:
        folders, files, old = [""], tree.files, self.old.files
        while folders:
            prefix = folders.pop()
            listing = self._listing(prefix)
            if listing is None:
                continue
            for name in listing[1]:
                tree.dirs.add(prefix + name)
                folders.append(prefix + name + "/")
            for name in listing[0]:
                rel = prefix + name
                try:
                    st = os.lstat(self.base + rel)
                except FileNotFoundError:
                    self._gone(prefix)
                    continue
                row = old.get(rel)
                if row is None or (row[0], row[1], row[2], row[3]) != (
                    st.st_size,
                    st.st_mtime_ns,
                    st.st_ctime_ns,
                    st.st_ino,
                ):
                    if not stat.S_ISREG(st.st_mode):
                        self._gone(prefix)
                        continue
                    row = self._fresh(rel, st)
                    if max(row[1], row[2]) >= self.cutoff:
                        files[rel] = LocalFile(row[0], row[5], row[6], row[4], row[7], row[8])
                        continue
                self.files[rel] = row
                files[rel] = LocalFile(row[0], row[5], row[6], row[4], row[7], row[8])

    def _listing(self, prefix: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """A folder's (files, folders): the journal's when the folder's stat is as recorded."""
        rel = prefix[:-1]
        try:
            st = os.lstat(self.base + prefix)
        except FileNotFoundError:
            return None
        row = self.old.dirs.get(rel)
        if row is not None and (row[0], row[1], row[2]) == (st.st_mtime_ns, st.st_ctime_ns, st.st_ino):
            self.dirs[rel] = row
            return row[3], row[4]
        files, dirs, everything = [], [], self.keep.exclude is None
        with os.scandir(self.base + prefix) as entries:
            for entry in entries:
                name = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    if everything or self.keep.keeps(name, is_dir=True):
                        dirs.append(entry.name)
                elif entry.is_file(follow_symlinks=False) and (everything or self.keep.keeps_file(name)):
                    files.append(entry.name)
        self.listed, self.changed = self.listed + 1, True
        if st.st_mtime_ns < self.cutoff:
            self.dirs[rel] = (st.st_mtime_ns, st.st_ctime_ns, st.st_ino, tuple(files), tuple(dirs))
        return tuple(files), tuple(dirs)

    def _gone(self, prefix: str) -> None:
        """A listed file vanished or changed kind while the folder was walked: list it next time."""
        self.dirs.pop(prefix[:-1], None)
        self.changed = True

    def _fresh(self, rel: str, st: os.stat_result) -> journals.FileRow:
        """A file the journal cannot vouch for: its hash from the row of a file moved here (a
        renamed folder's files keep their inode and ctime), from the hashes kept by size and
        mtime for a file the journal never held (its first scan, or changed too recently to be
        recorded) unless its ctime is that recent (without a journal: always, as before it), or
        else from its content."""
        self.changed = True
        path, digest = self.base + rel, None
        if not self.checksum:
            moved = self.old.renamed(st.st_ino)
            if moved is not None and moved[:3] == (st.st_size, st.st_mtime_ns, st.st_ctime_ns):
                digest = moved[6]  # moved here (its folder renamed): same inode, untouched
            elif self.old.path is None or (rel not in self.old.files and st.st_ctime_ns < self.cutoff):
                known = self._kept().get(path)  # by size and mtime (what the journal lacks only)
                if known is not None and known[0] == st.st_size and known[1] == st.st_mtime_ns:
                    digest = known[2]
        if digest is None:
            digest = content.hash_file(Path(path))[0]
            self.fresh.append((path, st.st_size, st.st_mtime_ns, digest))
        merkle = file_hash(bytes.fromhex(digest))
        return (
            st.st_size,
            st.st_mtime_ns,
            st.st_ctime_ns,
            st.st_ino,
            st.st_mode & 0o777,
            st.st_mtime,
            digest,
            merkle,
            named(rel, merkle),
        )

    def _kept(self) -> dict[str, tuple[int, int, str]]:
        """The state store's kept hashes under the root, read once, on the first file that needs them."""
        if self._kept_hashes is None:
            self._kept_hashes = {} if self.checksum else self.state.cached_hashes(Path(self.base))
        return self._kept_hashes


def remember_file(state: SyncState, local: Path, digest: str) -> LocalFile:
    """After writing `local` with known content: cache its hash so the next scan need not read it."""
    st = local.stat()
    if st.st_mtime_ns < time.time_ns() - RACY_NS:
        state.save_hashes([(str(local.resolve()), st.st_size, st.st_mtime_ns, digest)])
    return LocalFile(st.st_size, st.st_mtime, digest, st.st_mode & 0o777)
