"""Another client's changes, merged into the native mount's local copy: the daemon tells a folder
`stale` when it is used more than its timeout after its last listing; its new listing is compared
with what the cloud held before (`seen`: size and mtime from the last listing or send).

- A name new in the cloud becomes a stub (or a folder), and the kernel forgets it was absent;
  not a name removed or moved away here lately (the daemon remembers those).
- A file whose size or mtime changed in the cloud becomes a stub of the new version (`restub`).
- A file gone from the cloud is removed here (`drop`).

Never over a change made here: a file changed and not sent yet is left alone (its upload will
replace the cloud's: the last writer wins, as in the standard mount), and the daemon refuses a
file whose change time is not the one it had when sent or fetched. While a move or removal made
here is on its way the folder is not merged (its listing may still show what was moved).
"""

from __future__ import annotations

import errno
import os
import posixpath
from collections.abc import Callable
from pathlib import Path

from hycloud_core.crypto import header as hdr
from hycloud_core.errors import NotFoundError

from .changes import Changes


def _mtime_ms(seconds: float) -> int:
    return round(seconds * 1000)


class Relister:
    def __init__(self, client, local: Path, changes: Changes) -> None:
        self.client, self.local, self.changes = client, local, changes
        self.seen: dict[str, tuple[int, int]] = {}  # file path -> (size, mtime in ms) in the cloud
        self.ask: Callable[..., int] = lambda op, rel, **fields: errno.EIO
        self.ctime: Callable[[str], int] = lambda path: 0

    def listed(self, folder: str, entries: list[dict]) -> None:
        for entry in entries:
            if entry["type"] != "dir":
                path = posixpath.join(folder, entry["name"])
                self.seen[path] = (int(entry["size"]), _mtime_ms(float(entry["mtime"])))

    def sent(self, path: str, st: os.stat_result) -> None:
        self.seen[path] = (st.st_size, _mtime_ms(st.st_mtime))  # the cloud keeps the file's mtime

    def relist(self, rel: str) -> None:
        folder = "/" + rel
        if self.changes.moves_waiting():
            return  # asked again at the next use after the timeout
        try:
            entries = list(self.client.iter_dir(folder))
        except NotFoundError:
            return  # gone in the cloud (or made here and not sent): left as it is
        if any(e["name"] == hdr.NAME for e in entries):
            return
        for entry in entries:
            self._merge(posixpath.join(folder, entry["name"]), entry)
        names = {e["name"] for e in entries}
        for path in [p for p in self.seen if posixpath.dirname(p) == folder]:
            if posixpath.basename(path) not in names and self.changes.clean(path):
                if self.ask("drop", path.lstrip("/"), ctime=self.ctime(path)) in (0, errno.ENOENT):
                    self.seen.pop(path, None)
                    self.changes.gone(path)

    def _merge(self, path: str, entry: dict) -> None:
        local, rel = self.local / path.lstrip("/"), path.lstrip("/")
        if entry["type"] == "dir":
            if not os.path.lexists(local) and self.ask("dir", rel) == 0:
                self.changes.listed([path])
            return
        now = (int(entry["size"]), _mtime_ms(float(entry["mtime"])))
        fields = {"size": now[0], "mtime": int(float(entry["mtime"]) * 1e9)}
        if not os.path.lexists(local):  # the daemon makes it, unless removed here lately
            if self.ask("stub", rel, **fields) == 0:
                self.seen[path] = now
                self.changes.listed([path])
        elif self.seen.get(path) != now and self.changes.clean(path):
            if self.ask("restub", rel, ctime=self.ctime(path), **fields) == 0:
                self.seen[path] = now
