"""Files of encrypted folders in the mount: decrypted on open, sealed and sent when closed.

They do not go through the write-back cache: its flusher sends plaintext files in bundles, and an
encrypted folder's files must be chunked and sealed first (encrypted/view.py, the same upload
path as `hycloud put`). A handle holds the file's plaintext in a private local copy (decrypted
whole at open, every object checked, unless created or truncated); close() (FUSE flush) and
fsync() seal and send what changed and report its error, so a file is in the cloud when close
returns, and what another way in (the CLI, WebDAV) reads is what was written. Two writers of one
file: the last close wins, as elsewhere in the mount.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

from ..encrypted.routing import Located
from ..encrypted.view import SealedView
from .attrs import dir_attrs, file_attrs


class SealedHandle:
    def __init__(self, files: SealedFiles, path: str, where: Located, local: Path, dirty: bool, writer: bool):
        self.files, self.path, self.where, self.local = files, path, where, local
        self.dirty, self.writer = dirty, writer
        self.fd = os.open(local, os.O_RDWR)
        self._lock = threading.Lock()

    def read(self, size: int, offset: int) -> bytes:
        return os.pread(self.fd, size, offset)

    def write(self, data: bytes, offset: int) -> int:
        with self._lock:
            self.dirty = True
            return os.pwrite(self.fd, data, offset)

    def truncate(self, length: int) -> None:
        with self._lock:
            self.dirty = True
            os.ftruncate(self.fd, length)

    def commit(self) -> None:
        """Seal and send the local copy when it changed since the last commit."""
        with self._lock:
            if self.dirty:
                self.files.view.write_from(self.where, self.local)
                self.dirty = False

    def close(self) -> None:
        os.close(self.fd)
        self.local.unlink(missing_ok=True)
        self.files.closed(self)


class SealedFiles:
    def __init__(self, view: SealedView, cache_dir: str | None = None) -> None:
        self.view, self.cache_dir = view, cache_dir
        self.folder: Path | None = None  # made at the first open: most mounts never need it
        self._open: dict[str, list[SealedHandle]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def open(self, path: str, where: Located, writer: bool, fresh: bool) -> SealedHandle:
        """A handle on `path`'s plaintext: empty when `fresh` (create, O_TRUNC), else decrypted;
        an unsent change another handle holds is sent first, so this one reads it."""
        for other in self.handles(path):
            other.commit()
        with self._lock:
            if self.folder is None:
                self.folder = Path(tempfile.mkdtemp(prefix="hycloud-mount-sealed-", dir=self.cache_dir))
        local = self.folder / f"s{next(self._ids)}"
        if fresh:
            local.touch()
        else:
            self.view.read_to(where, local)
        handle = SealedHandle(self, path, where, local, dirty=fresh, writer=writer)
        with self._lock:
            self._open.setdefault(path, []).append(handle)
        return handle

    def closed(self, handle: SealedHandle) -> None:
        with self._lock:
            left = [h for h in self._open.get(handle.path, []) if h is not handle]
            self._open[handle.path] = left
            if not left:
                del self._open[handle.path]

    def handles(self, path: str) -> list[SealedHandle]:
        with self._lock:
            return list(self._open.get(path, []))

    def unsent(self, path: str) -> SealedHandle | None:
        """An open handle holding changes not sent yet (a new file is one until its close)."""
        return next((h for h in self.handles(path) if h.dirty), None)

    def attrs(self, path: str, where: Located) -> dict | None:
        """The stat of `path`: an unsent local copy first, else the decrypted name map's entry."""
        held = self.unsent(path)
        if held is not None:
            st = os.stat(held.local)
            return file_attrs(st.st_size, st.st_mtime)
        entry = self.view.entry(where)
        if entry is None:
            return None
        if entry["type"] == "dir":
            return dir_attrs(entry["mtime"] or time.time())
        return file_attrs(entry["size"], entry["mtime"])

    def names(self, where: Located, path: str) -> list[str]:
        """A folder's plaintext names, with files created here and not closed yet."""
        listed = [e["name"] for e in self.view.listing(where)]
        prefix = path.rstrip("/") + "/"
        with self._lock:
            new = [
                p[len(prefix) :] for p in self._open if p.startswith(prefix) and "/" not in p[len(prefix) :]
            ]
        return listed + sorted(set(new) - set(listed))

    def moved(self, old: str, new: str, where: Located) -> None:
        """Open handles of `old` write to `new` from now on (a rename of an open file)."""
        with self._lock:
            for handle in self._open.pop(old, []):
                handle.path, handle.where = new, where
                self._open.setdefault(new, []).append(handle)

    def remove_copies(self) -> None:
        """The local copies' folder, once the mount ends."""
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    def commit_under(self, path: str) -> None:
        """Unsent changes at or below `path` sent (before a move or removal of it)."""
        prefix = path.rstrip("/") + "/"
        with self._lock:
            held = [h for p, hs in self._open.items() if p == path or p.startswith(prefix) for h in hs]
        for handle in held:
            handle.commit()
