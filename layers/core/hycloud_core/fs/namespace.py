"""One user's namespace as a directory tree on EFS.

Writes go to a temporary file in the target directory and are renamed into place, so a reader
never sees half a file and a failed upload leaves the previous version intact. Every host path
goes through `paths.confine`, which refuses anything resolving outside the namespace.
"""

from __future__ import annotations

import os
import stat as stat_mod
import tempfile
from dataclasses import asdict, dataclass

from .. import paths
from ..errors import ConflictError, NotFoundError


@dataclass(frozen=True)
class Entry:
    name: str
    path: str
    type: str  # "file" | "dir"
    size: int
    mtime: float

    def to_dict(self) -> dict:
        return asdict(self)


class Namespace:
    def __init__(self, namespaces_dir: str, user: str) -> None:
        self.root = os.path.join(namespaces_dir, user)
        os.makedirs(self.root, exist_ok=True)

    def host(self, path: str) -> str:
        return paths.confine(self.root, path)

    def _lstat(self, path: str) -> os.stat_result:
        try:
            st = os.lstat(self.host(path))
        except FileNotFoundError:
            raise NotFoundError(f"{paths.normalize(path)} does not exist") from None
        if stat_mod.S_ISLNK(st.st_mode):
            raise NotFoundError(f"{paths.normalize(path)} does not exist")
        return st

    def stat(self, path: str) -> Entry:
        path = paths.normalize(path)
        st = self._lstat(path)
        kind = "dir" if stat_mod.S_ISDIR(st.st_mode) else "file"
        return Entry(
            name=path.rsplit("/", 1)[1] or "/",
            path=path,
            type=kind,
            size=0 if kind == "dir" else st.st_size,
            mtime=st.st_mtime,
        )

    def _require_dir(self, path: str) -> None:
        if self.stat(path).type != "dir":
            raise ConflictError(f"{path} is not a directory", code="not-a-directory")

    def mkdir(self, path: str, parents: bool = False) -> Entry:
        path = paths.normalize(path)
        if path == "/":
            return self.stat(path)
        parent = paths.parent(path)
        if parents:
            self.mkdir(parent, parents=True)
        else:
            self._require_dir(parent)
        try:
            os.mkdir(self.host(path))
        except FileExistsError:
            if self.stat(path).type != "dir":
                raise ConflictError(f"{path} exists and is a file", code="already-exists") from None
        return self.stat(path)

    def listdir(self, path: str) -> list[Entry]:
        path = paths.normalize(path)
        self._require_dir(path)
        entries = []
        with os.scandir(self.host(path)) as it:
            for item in it:
                if item.name.startswith(".hc-tmp-") or item.is_symlink():
                    continue
                entries.append(self.stat(f"{path.rstrip('/')}/{item.name}"))
        return sorted(entries, key=lambda e: e.name)

    def read(self, path: str) -> bytes:
        path = paths.normalize(path)
        if self.stat(path).type == "dir":
            raise ConflictError(f"{path} is a directory", code="is-a-directory")
        fd = os.open(self.host(path), os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            return f.read()

    def write(self, path: str, data: bytes, parents: bool = False) -> Entry:
        """Atomically create or replace a file."""
        path = paths.normalize(path)
        if path == "/":
            raise ConflictError("/ is a directory", code="is-a-directory")
        parent = paths.parent(path)
        if parents:
            self.mkdir(parent, parents=True)
        else:
            self._require_dir(parent)
        target = self.host(path)
        if os.path.isdir(target):
            raise ConflictError(f"{path} is a directory", code="is-a-directory")
        fd, tmp = tempfile.mkstemp(prefix=".hc-tmp-", dir=os.path.dirname(target))
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return self.stat(path)
