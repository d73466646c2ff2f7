"""Encrypted folders as plaintext, for the long-lived ways in that speak paths (the mount, WebDAV).

Inside an encrypted folder they list the decrypted names, read files decrypted (every object
checked, download.py) and write through the encrypted upload path (chunks sealed here, name maps
committed naming the versions they replace): the same engine as `hycloud put/get`, so what one
way in writes another reads. The secret is the CLI's, non-interactive: `$HYCLOUD_PASSPHRASE`,
else the key file `$HYCLOUD_KEY_FILE`. Without one (or with one that opens no key slot) the
folder is shown as it is stored (ciphertext) and writes into it are refused, with one line on
stderr naming the folder.

Which folders are encrypted: asked once per folder and kept (roots.KnownRoots), and learned for
free from folder listings the caller already holds (`kept`), so a path outside any encrypted
folder costs no request to read. Name maps are kept `ttl` seconds (the mount's metadata timeout);
this view's own writes drop what it kept of that folder.
"""

from __future__ import annotations

import dataclasses
import posixpath
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hycloud_core import paths
from hycloud_core.errors import ConflictError, NotFoundError

from . import crossing, download, files, moves, upload
from .folder import EncryptedFolder, split
from .roots import KnownRoots
from .routing import Located, candidates
from .vaults import EncryptedPathError, Vaults

if TYPE_CHECKING:
    from ..sdk.client import HyCloud

Kept = Callable[[str], list[dict] | None]  # a folder's listing the caller holds, without a request


class SealedView:
    def __init__(
        self, client: HyCloud, roots: KnownRoots | None = None, kept: Kept | None = None, ttl: float = 2.0
    ) -> None:
        self.client = client
        self.vaults = Vaults(client)
        if roots is not None:
            self.vaults.roots = roots
        self.roots = self.vaults.roots
        self.kept = kept
        self.ttl = ttl
        self._maps: dict[tuple[str, str], tuple[float, dict[str, dict[str, Any]]]] = {}
        self._locks: dict[str, threading.RLock] = {}
        self._closed: set[str] = set()  # folders with no key to open them (said once)
        self._lock = threading.Lock()

    # --- where ---------------------------------------------------------------------------------
    def locate(self, path: str, itself: bool = False, ask: bool = False) -> Located | None:
        """The encrypted folder `path` is in (or is, with `itself`), from what is known and the
        listings kept; with `ask`, folders still unknown are asked (one request, kept)."""
        roots = candidates(path)[0 if itself else 1 :]
        found = self._known(roots)
        if found is None and self.kept is not None:
            for root in roots:
                if root not in self.roots.known:
                    listed = self.kept(root)
                    if listed is not None:
                        self.roots.note_listing(root, [e["name"] for e in listed])
            found = self._known(roots)
        if found is None and ask and any(r not in self.roots.known for r in roots):
            return self.roots.locate(path, itself)
        return None if found is None else Located(found, _inner(path, found))

    def _known(self, roots: list[str]) -> str | None:
        return next((r for r in roots if self.roots.known.get(r)), None)

    def opened(self, where: Located, path: str) -> EncryptedFolder | None:
        """The folder opened with the user's secret; None (said once on stderr) without one."""
        if where.root in self._closed:
            return None
        try:
            return self.vaults.folder(where, path)
        except EncryptedPathError as err:
            with self._lock:
                if where.root not in self._closed:
                    self._closed.add(where.root)
                    print(f"hycloud: {err.strerror}; shown as stored, writes refused", file=sys.stderr)
            return None

    def sealed(self, path: str, itself: bool = False, ask: bool = False) -> Located | None:
        """`locate`, only when the folder opens: None outside and without a key (as stored)."""
        where = self.locate(path, itself, ask)
        return where if where is not None and self.opened(where, path) is not None else None

    def folder(self, where: Located) -> EncryptedFolder:
        opened = self.opened(where, where.root)
        if opened is None:
            raise EncryptedPathError(where.root, where.root, "its key is not available")
        return opened

    def reader(self, where: Located) -> EncryptedFolder:
        """The folder for a read: the same keys and counters, but versions of its own, so a read
        running beside a write never changes the version that write replaces (a change another
        device made meanwhile is then refused and merged, not overwritten)."""
        return dataclasses.replace(self.folder(where), versions={})

    # --- reads ---------------------------------------------------------------------------------
    def _entries(self, where: Located, dir_rel: str) -> dict[str, dict[str, Any]]:
        key = (where.root, dir_rel)
        hit = self._maps.get(key)
        if hit is not None and hit[0] > time.monotonic():
            return hit[1]
        ((dir_map, _),) = self.reader(where).read_maps([dir_rel]).values()
        self._maps[key] = (time.monotonic() + self.ttl, dict(dir_map.entries))
        return self._maps[key][1]

    def entry(self, where: Located) -> dict[str, Any] | None:
        """`where`'s entry as a listing gives it (name, type, size, mtime, sha256), None if absent."""
        if not where.inner:
            return {"name": posixpath.basename(where.root), "type": "dir", "size": 0, "mtime": 0.0}
        parent, name = posixpath.split(where.inner)
        if parent and self.entry(Located(where.root, parent)) is None:
            return None
        found = self._entries(where, parent).get(name)
        return None if found is None else _as_listed(name, found)

    def listing(self, where: Located) -> list[dict[str, Any]]:
        found = self.entry(where)
        if found is None or found["type"] != "dir":
            raise NotFoundError(f"{where.inner} is not a folder of the encrypted folder {where.root}")
        return [_as_listed(n, e) for n, e in sorted(self._entries(where, where.inner).items())]

    def read_to(self, where: Located, local: Path) -> None:
        """The file's plaintext into `local`, every object checked first."""
        folder = self.reader(where)
        found = files.entry_or_missing(folder, where.inner)
        if found["t"] != "file":
            raise ConflictError(f"{where.inner} is a folder", code="is-a-directory")
        download.fetch(folder, [download.Wanted(where.inner, local, int(found["v"]))])

    # --- writes (one at a time per folder) ------------------------------------------------------
    def _writing(self, where: Located) -> threading.RLock:
        with self._lock:
            return self._locks.setdefault(where.root, threading.RLock())

    def _changed(self, root: str) -> None:
        for key in [k for k in self._maps if k[0] == root]:
            self._maps.pop(key, None)

    def write_from(self, where: Located, local: Path) -> None:
        """`local`'s bytes as the file `where` (sealed here; only chunks the folder lacks sent)."""
        with self._writing(where):
            try:
                upload.put_file(self.folder(where), local, where.inner)
            finally:
                self._changed(where.root)

    def mkdir(self, where: Located) -> None:
        with self._writing(where):
            if self.entry(where) is not None:
                raise ConflictError(f"{where.inner} already exists", code="already-exists")
            try:
                files.make_dir(self.folder(where), where.inner)
            finally:
                self._changed(where.root)

    def remove(self, where: Located, recursive: bool = False, folder: bool | None = None) -> None:
        """A file or a folder (empty, unless `recursive`); `folder` True/False: only that kind."""
        with self._writing(where):
            found = self.entry(where)
            if found is None:
                raise NotFoundError(f"{where.inner} is not in the encrypted folder {where.root}")
            if folder is not None and (found["type"] == "dir") != folder:
                code = "not-a-directory" if folder else "is-a-directory"
                raise ConflictError(f"{where.inner}: wrong kind", code=code)
            try:
                files.remove(self.folder(where), where.inner, recursive)
            finally:
                self._changed(where.root)

    def move(self, src: Located, dst: Located, replace_dir: bool = True) -> None:
        """Within one encrypted folder: every chunk reused."""
        with self._writing(src):
            try:
                moves.move(self.folder(src), src.inner, dst.inner, replace_dir)
            finally:
                self._changed(src.root)

    def copy(self, src: Located, dst: Located) -> None:
        with self._writing(src):
            try:
                moves.copy(self.folder(src), src.inner, dst.inner)
            finally:
                self._changed(src.root)

    def across(self, src: str, dst: str, src_at: Located | None, dst_at: Located | None, move: bool) -> None:
        """A copy or move across folder keys (another encrypted folder, or plain storage): the
        files decrypted and sealed again on this machine (crossing.py)."""
        ends = crossing.Ends(src_at, dst_at)
        held = sorted({w.root: w for w in (src_at, dst_at) if w is not None}.values(), key=lambda w: w.root)
        for where in held:  # in one order, so two crossings the opposite ways cannot deadlock
            self._writing(where).acquire()
        try:
            crossing.copy_or_move(self.client, src, dst, ends, move, self.folder, into=False)
        finally:
            for where in reversed(held):
                self._changed(where.root)
                self._writing(where).release()


def _inner(path: str, root: str) -> str:
    return "/".join(split(paths.normalize(path))[len(split(root)) :])


def _as_listed(name: str, entry: dict[str, Any]) -> dict[str, Any]:
    kind = "dir" if entry["t"] == "dir" else "file"
    listed = {
        "name": name,
        "type": kind,
        "size": int(entry.get("size", 0)),
        "mtime": float(entry.get("mtime", 0)),
    }
    return listed | ({"sha256": entry["sha256"]} if "sha256" in entry else {})
