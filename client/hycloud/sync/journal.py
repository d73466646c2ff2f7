"""The scan journal: what the last scan of one sync pair saw, so the next one stats instead of
reads, and lists only folders whose entries changed.

One file per sync pair beside the state store (`<state>.scan/<pair>`), written whole (marshal,
then an atomic rename) after a scan that saw anything new. It holds, per file, the stat fields
it trusts (size, mtime_ns, ctime_ns, inode), its mode, content hash, Merkle hash and what the
one-round exchange's sketch takes a prefix of (merkle/sketch.py's `named`); per folder, its own
stat fields and the names of the files and folders it held.

What a later scan trusts (Linux semantics, as git's index does):

- a file whose size, mtime_ns, ctime_ns and inode are all as recorded has the recorded content:
  writing a file moves its mtime and ctime, restoring the mtime (touch -d, utime) moves its
  ctime, replacing it changes its inode;
- a folder whose mtime_ns, ctime_ns and inode are as recorded holds the recorded names: creating,
  deleting or renaming an entry moves its folder's mtime and ctime. Its files are still stat'ed
  (an edit in place does not touch the folder) and its subfolders still visited;
- only files whose mtime and ctime (folders: mtime) are older than `RACY_NS` at the scan that
  saw them are recorded: a second write within the same timestamp tick would otherwise go
  unseen. A file the journal lacks is read unless its ctime is that old and the state store
  keeps its hash by size and mtime (the store alone, as before the journal, cannot see an edit
  that kept size and mtime); a file whose recorded fields moved is read again.

What it cannot see: a change that keeps size, mtime, ctime and inode alike, which needs the clock
set back or the disk written beneath the file system, and file systems that do not keep these
fields as Linux's local ones do (some network and FUSE file systems). `hycloud sync --rescan`
lists every folder again, and `--checksum` reads every file again; deleting the journal file
does the same as --rescan.
"""

from __future__ import annotations

import hashlib
import marshal
import os
from dataclasses import dataclass, field
from pathlib import Path

VERSION = 2  # 2: each file's sketch entry kept

# rel -> (size, mtime_ns, ctime_ns, ino, mode, mtime, content_hash, merkle digest, sketch entry)
FileRow = tuple[int, int, int, int, int, float, str, bytes, bytes]
# rel ("" for the root) -> (mtime_ns, ctime_ns, ino, file names, folder names)
DirRow = tuple[int, int, int, tuple[str, ...], tuple[str, ...]]


@dataclass
class Journal:
    """What one scan saw; `key` ties it to the remote root and filters its hashes and names hold."""

    path: Path | None
    key: str
    files: dict[str, FileRow] = field(default_factory=dict)
    dirs: dict[str, DirRow] = field(default_factory=dict)
    _by_inode: dict[int, str] | None = None

    def renamed(self, ino: int) -> FileRow | None:
        """The row of a file now at another path (its folder moved or it was renamed), by inode."""
        if self._by_inode is None:
            self._by_inode = {row[3]: rel for rel, row in self.files.items()}
        rel = self._by_inode.get(ino)
        return None if rel is None else self.files[rel]


def journal_key(remote_root: str, exclude: tuple[str, ...], include: tuple[str, ...]) -> str:
    """What a journal's rows depend on besides the local tree: Merkle hashes on the remote root,
    the recorded names on the filters."""
    text = "\n".join([str(VERSION), remote_root, *exclude, "\0", *include])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def journal_path(state_path: Path, pair: str) -> Path:
    return state_path.with_name(state_path.name + ".scan") / pair


def load(path: Path, key: str) -> Journal:
    """The journal at `path` if it was written for `key`, else an empty one (a full scan)."""
    try:
        data = marshal.loads(path.read_bytes())
        if data["version"] == VERSION and data["key"] == key:
            return Journal(path, key, data["files"], data["dirs"])
    except (OSError, EOFError, ValueError, TypeError, KeyError):
        pass
    return Journal(path, key)


def save(journal: Journal) -> None:
    """Write the journal whole, atomically: a crash leaves the old one or the new one."""
    if journal.path is None:
        return
    journal.path.parent.mkdir(parents=True, exist_ok=True)
    data = {"version": VERSION, "key": journal.key, "files": journal.files, "dirs": journal.dirs}
    temp = journal.path.with_name(f"{journal.path.name}.{os.getpid()}.tmp")
    temp.write_bytes(marshal.dumps(data))
    os.replace(temp, journal.path)
