"""The FUSE operations: each maps to SDK calls; errors map to errno values.

Metadata (entries and listings) is cached for a short time by `MetaCache`, and every change
made through the mount drops the cached entries it touches. Files open for writing are served from their local spool
(size included) until they are closed and uploaded.
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
import time
from collections.abc import Callable
from functools import wraps

import mfusepy as fuse

from hycloud_core.errors import ConflictError, ForbiddenError, HyCloudError, NotFoundError

from ..sdk import HyCloud
from .handles import READ_AHEAD, ReadHandle, WriteHandle
from .meta import MetaCache

IDLE_THREADS = 10  # worker threads kept waiting between bursts (libfuse's own default)
CONFLICT_ERRNO = {
    "already-exists": errno.EEXIST,
    "not-empty": errno.ENOTEMPTY,
    "is-a-directory": errno.EISDIR,
    "not-a-directory": errno.ENOTDIR,
}


def _errno(err: HyCloudError) -> int:
    if isinstance(err, NotFoundError):
        return errno.ENOENT
    if err.code == "quota-exceeded":
        return errno.EDQUOT
    if isinstance(err, ForbiddenError):
        return errno.EACCES
    if isinstance(err, ConflictError) or err.code in CONFLICT_ERRNO:
        return CONFLICT_ERRNO.get(err.code, errno.EBUSY)
    return errno.EIO


def errors_as_errno(fn: Callable) -> Callable:
    @wraps(fn)
    def wrapped(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except HyCloudError as err:
            raise fuse.FuseOSError(_errno(err)) from err

    return wrapped


class HyCloudFuse(fuse.Operations):
    use_ns = True

    def __init__(self, client: HyCloud, read_ahead: int = READ_AHEAD) -> None:
        self.client, self.read_ahead = client, read_ahead
        self.meta = MetaCache(client)
        self._handles: dict[int, ReadHandle | WriteHandle] = {}
        self._writing: dict[str, WriteHandle] = {}
        self._ids = itertools.count(1)

    # --- metadata ----------------------------------------------------------------------------------
    def _entry(self, path: str) -> dict | None:
        return self.meta.entry(path)

    def _forget(self, *paths: str) -> None:
        self.meta.forget(*paths)

    @errors_as_errno
    def getattr(self, path: str, fh: int | None = None) -> dict:
        writer = self._writing.get(path)
        if writer is not None:
            return _file_attrs(writer.size, time.time())
        entry = self._entry(path)
        if entry is None:
            raise fuse.FuseOSError(errno.ENOENT)
        if entry["type"] == "dir":
            return {**_times(entry["mtime"]), "st_mode": stat.S_IFDIR | 0o755, "st_nlink": 2, "st_size": 0}
        return _file_attrs(entry["size"], entry["mtime"])

    @errors_as_errno
    def readdir(self, path: str, fh: int) -> list[str]:
        names = [".", ".."]
        names += [entry["name"] for entry in self.meta.listing(path)]
        return names + [
            p.rsplit("/", 1)[1]
            for p in self._writing
            if os.path.dirname(p) == path and p.rsplit("/", 1)[1] not in names
        ]

    def statfs(self, path: str) -> dict:
        return {
            "f_bsize": 4096,
            "f_frsize": 4096,
            "f_blocks": 1 << 30,
            "f_bfree": 1 << 30,
            "f_bavail": 1 << 30,
            "f_namemax": 255,
        }

    def chmod(self, path: str, mode: int) -> int:
        return 0  # modes are not kept by the cloud

    def chown(self, path: str, uid: int, gid: int) -> int:
        return 0

    def utimens(self, path: str, times=None) -> int:
        return 0  # the cloud sets mtimes itself

    # --- namespace changes -----------------------------------------------------------------------------
    @errors_as_errno
    def mkdir(self, path: str, mode: int) -> None:
        self.client.mkdir(path)
        self._forget(path)

    @errors_as_errno
    def rmdir(self, path: str) -> None:
        self.client.rmdir(path)
        self._forget(path)

    @errors_as_errno
    def unlink(self, path: str) -> None:
        self.client.rm(path)
        self._forget(path)

    @errors_as_errno
    def rename(self, old: str, new: str) -> None:
        """POSIX rename replaces an existing file at `new`."""
        target = self._entry(new)
        if target is not None and target["type"] == "file":
            self.client.rm(new)
        self.client.mv(old, new)
        self._forget(old, new)

    # --- content -----------------------------------------------------------------------------------------
    def _keep(self, handle: ReadHandle | WriteHandle) -> int:
        fh = next(self._ids)
        self._handles[fh] = handle
        if isinstance(handle, WriteHandle):
            self._writing[handle.path] = handle
        return fh

    @errors_as_errno
    def create(self, path: str, mode: int, fi=None) -> int:
        return self._keep(WriteHandle(self.client, path, new=True))

    @errors_as_errno
    def open(self, path: str, flags: int) -> int:
        if flags & os.O_ACCMODE == os.O_RDONLY:
            return self._keep(ReadHandle(self.client, path, self.read_ahead))
        if path in self._writing:
            return self._keep(self._writing[path])
        truncating = bool(flags & os.O_TRUNC)
        return self._keep(WriteHandle(self.client, path, existing=not truncating, new=truncating))

    @errors_as_errno
    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return self._handles[fh].read(size, offset)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        handle = self._handles[fh]
        if not isinstance(handle, WriteHandle):
            raise fuse.FuseOSError(errno.EBADF)
        return handle.write(data, offset)

    @errors_as_errno
    def truncate(self, path: str, length: int, fh: int | None = None) -> None:
        handle = self._writing.get(path)
        if handle is None:
            handle = WriteHandle(self.client, path, existing=length > 0)
            try:
                handle.truncate(length)
                handle.flush()
            finally:
                handle.close()
            self._forget(path)
        else:
            handle.truncate(length)

    @errors_as_errno
    def flush(self, path: str, fh: int) -> None:
        handle = self._handles.get(fh)
        if isinstance(handle, WriteHandle):
            handle.flush()
            self._forget(path)

    def release(self, path: str, fh: int) -> None:
        handle = self._handles.pop(fh, None)
        if handle is None or handle in self._handles.values():
            return
        if isinstance(handle, WriteHandle):
            self._writing.pop(path, None)
        handle.close()

    def fsync(self, path: str, datasync: int, fh: int) -> None:
        self.flush(path, fh)


def _times(mtime: float) -> dict:
    ns = int(mtime * 1e9)
    return {"st_mtime": ns, "st_ctime": ns, "st_atime": ns}


def _file_attrs(size: int, mtime: float) -> dict:
    """`st_blocks` in 512-byte units, as `du` counts them (without it every file takes 0)."""
    return {
        **_times(mtime),
        "st_mode": stat.S_IFREG | 0o644,
        "st_nlink": 1,
        "st_size": size,
        "st_blocks": -(-size // 512),
    }


def _fuse_options() -> dict:
    """libfuse 3.14 logs `Ignoring invalid max threads value 4294967295` when `max_idle_threads`
    is left unset (its default is UINT_MAX): name it. The option does not exist in libfuse 2."""
    return {"max_idle_threads": IDLE_THREADS} if fuse.fuse_version_major == 3 else {}


def mount(client: HyCloud, mountpoint: str, read_ahead: int = READ_AHEAD, foreground: bool = True) -> None:
    """Mount until unmounted (`fusermount3 -u DIR`) or interrupted."""
    try:
        fuse.FUSE(
            HyCloudFuse(client, read_ahead),
            mountpoint,
            foreground=foreground,
            fsname="hycloud",
            auto_unmount=True,  # fusermount3 unmounts when the process ends, even killed: no stale mount
            **_fuse_options(),
        )
    except RuntimeError as err:  # libfuse refused: no /dev/fuse, no permission, already mounted...
        raise HyCloudError(f"cannot mount on {mountpoint}: {err}", code="mount-failed", status=400) from err
