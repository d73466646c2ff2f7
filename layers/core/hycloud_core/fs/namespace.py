"""One user's namespace as a directory tree on EFS: small files, directories and link files.

Writes go to a temporary file in the target directory and are renamed into place, so a reader
never sees half a file and a failed upload leaves the previous version intact. Every host path
goes through `paths.confine`, which refuses anything resolving outside the namespace. Link
files (large files) are reported with the size and time of the content they stand for; users
never see them as such.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat as stat_mod
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from typing import Any

from .. import content, paths
from ..errors import ConflictError, NotFoundError
from ..linkfile import LINK_MODE, LinkFile, is_link_mode
from .segments_format import Stub, stub_from_bytes

TMP_PREFIX = ".hc-tmp-"


@dataclass(frozen=True)
class Entry:
    name: str
    path: str
    type: str  # "file" | "dir"
    size: int
    mtime: float
    storage: str | None = None  # "small" (EFS) | "large" (S3 behind a link file) | None for dirs
    content_hash: str | None = None
    mode: int | None = None  # a file's permission bits (0o755 for an executable)
    sha256: str | None = None  # the plain sha256, where known (stat_hashed, link files)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def file_mode(mode: int) -> int:
    """The permission bits a small file reports and keeps: never a special bit (the sticky bit
    marks link files), and always readable and writable by the owner (the functions)."""
    return (mode & 0o777) | 0o600


class Namespace:
    def __init__(self, namespaces_dir: str, user: str) -> None:
        self.root = os.path.join(namespaces_dir, user)
        os.makedirs(self.root, exist_ok=True)

    def host(self, path: str) -> str:
        return paths.confine(self.root, path)

    def _lstat(self, path: str) -> os.stat_result:
        try:
            st = os.lstat(self.host(path))
        except (FileNotFoundError, NotADirectoryError):
            raise NotFoundError(f"{path} does not exist") from None
        if stat_mod.S_ISLNK(st.st_mode):
            raise NotFoundError(f"{path} does not exist")
        return st

    def exists(self, path: str) -> bool:
        try:
            self._lstat(paths.normalize(path))
            return True
        except NotFoundError:
            return False

    def file_entry(self, path: str) -> Entry | None:
        """The file at `path`; None when nothing, or a folder, is there."""
        try:
            entry = self.stat(path)
        except NotFoundError:
            return None
        return None if entry.type == "dir" else entry

    def stat(self, path: str) -> Entry:
        path = paths.normalize(path)
        st = self._lstat(path)
        name = path.rsplit("/", 1)[1] or "/"
        if stat_mod.S_ISDIR(st.st_mode):
            return Entry(name, path, "dir", 0, st.st_mtime)
        if is_link_mode(st.st_mode):
            raw = self._read_raw(path)
            if stub := stub_from_bytes(raw):  # a packed small file (fs/segments.py)
                return Entry(name, path, "file", stub.size, st.st_mtime, "small", mode=file_mode(stub.mode))
            link = LinkFile.from_bytes(raw)
            return Entry(
                name, path, "file", link.size, link.mtime, "large", link.content_hash, link.mode, link.sha256
            )
        return Entry(name, path, "file", st.st_size, st.st_mtime, "small", mode=file_mode(st.st_mode))

    def stat_hashed(self, path: str) -> Entry:
        """`stat`, and for a small file its hashes too: it is read, which one stat can afford (at
        most the small-file threshold) and a listing could not."""
        entry = self.stat(path)
        if entry.storage != "small":
            return entry
        if stub := self.segment_stub(entry.path):  # its hashes are in the stub: no segment read
            return replace(entry, content_hash=stub.content_hash, sha256=stub.sha256)
        try:
            with open(self.host(entry.path), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise NotFoundError(f"{path} does not exist") from None
        return replace(
            entry,
            size=len(data),
            content_hash=content.hash_bytes(data),
            sha256=hashlib.sha256(data).hexdigest(),
        )

    def require_dir(self, path: str) -> None:
        if self.stat(path).type != "dir":
            raise ConflictError(f"{path} is not a directory", code="not-a-directory")

    def mkdir(self, path: str, parents: bool = False) -> Entry:
        path = paths.normalize(path)
        if path == "/":
            return self.stat(path)
        if parents:
            self.mkdir(paths.parent(path), parents=True)
        else:
            self.require_dir(paths.parent(path))
        try:
            os.mkdir(self.host(path))
        except FileExistsError:
            if self.stat(path).type != "dir":
                raise ConflictError(f"{path} exists and is a file", code="already-exists") from None
        return self.stat(path)

    def names(self, path: str) -> list[str]:
        """Sorted names in a directory, without temporary files and symlinks."""
        path = paths.normalize(path)
        self.require_dir(path)
        with os.scandir(self.host(path)) as it:
            return sorted(e.name for e in it if not e.name.startswith(TMP_PREFIX) and not e.is_symlink())

    def listdir(
        self, path: str, after: str | None = None, limit: int | None = None
    ) -> tuple[list[Entry], str | None]:
        """One page of a directory: entries whose name sorts after `after`, and the cursor for the next."""
        path = paths.normalize(path)
        names = [n for n in self.names(path) if after is None or n > after]
        page = names[:limit] if limit else names
        entries = [self.stat(f"{path.rstrip('/')}/{n}") for n in page]
        more = limit is not None and len(names) > limit
        return entries, (page[-1] if more else None)

    def walk_files(self, path: str) -> Iterator[Entry]:
        """Every file below a directory (or the file itself), depth first."""
        entry = self.stat(path)
        if entry.type == "file":
            yield entry
            return
        for name in self.names(entry.path):
            yield from self.walk_files(f"{entry.path.rstrip('/')}/{name}")

    def read(self, path: str) -> bytes:
        path = paths.normalize(path)
        if self.stat(path).type == "dir":
            raise ConflictError(f"{path} is a directory", code="is-a-directory")
        data, mode = self._read_with_mode(path)
        if is_link_mode(mode) and (stub := stub_from_bytes(data)):  # packed: read from its segment
            from .segments_read import read_member  # boto3 only where packed files are met

            return read_member(stub)
        return data

    def _read_with_mode(self, path: str) -> tuple[bytes, int]:
        """The file's bytes and the mode of that very file (a rename meanwhile cannot mix them)."""
        fd = os.open(self.host(path), os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            return f.read(), os.fstat(f.fileno()).st_mode

    def _read_raw(self, path: str) -> bytes:
        return self._read_with_mode(path)[0]

    def read_link(self, path: str) -> LinkFile:
        return LinkFile.from_bytes(self._read_raw(path))

    def segment_stub(self, path: str) -> Stub | None:
        """The stub at `path` if the file there is packed into a segment (docs/SEGMENTS.md)."""
        path = paths.normalize(path)
        try:  # a plain small file costs one lstat: only marked files are opened
            if not is_link_mode(os.lstat(self.host(path)).st_mode):
                return None
            data, mode = self._read_with_mode(path)
        except OSError:
            return None
        return stub_from_bytes(data) if is_link_mode(mode) else None

    def _target_for_write(self, path: str, parents: bool) -> str:
        if path == "/":
            raise ConflictError("/ is a directory", code="is-a-directory")
        if parents:
            self.mkdir(paths.parent(path), parents=True)
        else:
            self.require_dir(paths.parent(path))
        target = self.host(path)
        if os.path.isdir(target):
            raise ConflictError(f"{path} is a directory", code="is-a-directory")
        return target

    def write(
        self, path: str, data: bytes, parents: bool = False, mode: int = 0o640, mtime: float | None = None
    ) -> Entry:
        """Atomically create or replace a file (with the uploader's modification time, if given).
        A folder made or removed at the path or above it meanwhile is a 409, as it is when found
        before."""
        path = paths.normalize(path)
        target = self._target_for_write(path, parents)
        try:
            fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, dir=os.path.dirname(target))
        except (NotADirectoryError, FileNotFoundError):
            raise ConflictError(f"{paths.parent(path)} is not a directory", code="not-a-directory") from None
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, mode)
            if mtime is not None:
                os.utime(tmp, (mtime, mtime))
            os.replace(tmp, target)
        except IsADirectoryError:
            os.unlink(tmp)
            raise ConflictError(f"{path} is a directory", code="is-a-directory") from None
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return self.stat(path)

    def write_link(self, path: str, link: LinkFile, parents: bool = False) -> Entry:
        return self.write(path, link.to_bytes(), parents=parents, mode=LINK_MODE)

    def current_link(self, path: str) -> LinkFile | None:
        """The link file at `path`, if that path is a large file now."""
        try:
            entry = self.stat(path)
        except NotFoundError:
            return None
        return self.read_link(path) if entry.storage == "large" else None

    def unlink(self, path: str) -> None:
        path = paths.normalize(path)
        if self.stat(path).type == "dir":
            raise ConflictError(f"{path} is a directory", code="is-a-directory")
        os.unlink(self.host(path))

    def rmdir(self, path: str) -> None:
        path = paths.normalize(path)
        if path == "/":
            raise ConflictError("cannot remove the root directory", code="is-root")
        self.require_dir(path)
        if self.names(path):
            raise ConflictError(f"{path} is not empty", code="not-empty")
        shutil.rmtree(self.host(path))  # only temporary files can be left in it

    def rename(self, src: str, dst: str) -> None:
        os.rename(self.host(src), self.host(dst))

    def copy_file(self, src: str, dst: str) -> None:
        """Copy a small file's bytes or a link file as it is (the caller adds the reference)."""
        mode = self._lstat(src).st_mode & 0o7777
        fd = os.open(self.host(src), os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            self.write(dst, f.read(), mode=mode)
