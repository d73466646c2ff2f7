"""Which cloud folders are encrypted folders, asked once per folder and then kept.

A folder becomes an encrypted folder only by `hycloud mkdir --encrypted` / `crypt init` (its
`.hcenc` header written where the folder is), so a long-lived caller (the fsspec filesystem, a
mount, the WebDAV server) may keep the answer for each folder as long as it lives: a folder
made encrypted by someone else after it was asked about is seen only by a new instance. Unknown
folders are asked together in one bundle request (routing.headers_at); folder listings already
read answer for free (`note_listing`).
"""

from __future__ import annotations

import posixpath
import threading
from typing import TYPE_CHECKING

from hycloud_core import paths
from hycloud_core.crypto import header as hdr

from . import routing
from .folder import split

if TYPE_CHECKING:
    from ..sdk.client import HyCloud


class KnownRoots:
    def __init__(self, client: HyCloud) -> None:
        self.client = client
        self.known: dict[str, bool] = {}  # folder -> holds a header
        self.asked = 0  # bundle requests made (for tests and benches)
        self._lock = threading.Lock()

    def note(self, folder: str, encrypted: bool) -> None:
        with self._lock:
            self.known[paths.normalize(folder)] = encrypted

    def note_listing(self, folder: str, names: list[str]) -> None:
        """A listing of `folder` (entry names or paths) tells whether it holds a header."""
        if paths.normalize(folder) in self.known:  # a decrypted listing has no header in it
            return
        self.note(folder, any(posixpath.basename(n) == hdr.NAME for n in names))

    def locate(self, path: str, itself: bool = True) -> routing.Located | None:
        """The encrypted folder `path` is in (or is, with `itself`); None outside any. Only the
        folders not yet known are asked, in one request."""
        path = paths.normalize(path)
        roots = routing.candidates(path)
        if not itself:
            roots = roots[1:]
        if self._known_root(roots) is None:
            self.ask([path], itself)
        found = self._known_root(roots)
        if found is None:
            return None
        return routing.Located(found, "/".join(split(path)[len(split(found)) :]))

    def ask(self, paths_: list[str], itself: bool = False) -> None:
        """Learn, in one request at most, about every folder above each of `paths_` (and each
        path itself, with `itself`) not yet known and not inside a known encrypted folder."""
        unknown: set[str] = set()
        for path in paths_:
            roots = routing.candidates(paths.normalize(path))[0 if itself else 1 :]
            if self._known_root(roots) is None:
                unknown |= {r for r in roots if r not in self.known}
        if unknown:
            answered = routing.headers_at(self.client, sorted(unknown))
            with self._lock:
                self.asked += 1
                self.known.update({r: r in answered for r in unknown})

    def _known_root(self, roots: list[str]) -> str | None:
        """The deepest of `roots` known to be encrypted."""
        return next((r for r in roots if self.known.get(r)), None)

    def below(self, path: str) -> list[str]:
        """Encrypted folders known to be at or below `path` (a tree written there reaches them)."""
        path = paths.normalize(path)
        prefix = path.rstrip("/") + "/"
        return sorted(r for r, enc in self.known.items() if enc and (r == path or r.startswith(prefix)))
