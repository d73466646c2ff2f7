"""The FUSE operations: each maps to SDK calls, or to the write-back cache; errors map to errno values.

Consistency. Within the mount: close-to-open and more, since reads and stats of a file written
through the mount are served from its cached copy at once. Writes are durable when `fsync`
returns (close only makes them local: `caches/writeback.py` sends them shortly after) and on unmount
(`destroy`); a folder made through the mount reaches the cloud with its first file sent, when a
move or removal needs it, on fsyncdir, or on unmount. Across clients: another client sees a change once the flusher has sent it and its
own caches have expired; this mount sees another client's change once the listing of its folder
has been refreshed: usually `metadata_ttl` (2 s unless told) plus one listing, at most
`MetaCache.max_age` (15 times that) plus one listing, plus up to twice `metadata_ttl` kept by the
kernel (`_fuse_options`: it may keep an answer given just before the refresh landed), and only when
it holds no unsent change to that file. No locking: concurrent writers of one file, the last upload wins.
Listings expired but within their bound answer at once while refreshed in the background, and
every change made through the mount edits the cached listings it touches (`caches/meta.py`).
"""

from __future__ import annotations

import errno
import faulthandler
import inspect
import itertools
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import wraps
from pathlib import Path

import mfusepy as fuse

from hycloud_core.errors import ConflictError, ForbiddenError, HyCloudError, NotFoundError

from ..caches import learn_sent, still_valid
from ..caches.meta import TTL_S, UNKNOWN, MetaCache
from ..caches.writeback import LIMIT, Cached, WriteBack
from ..encrypted.roots import KnownRoots
from ..encrypted.routing import Located
from ..encrypted.view import SealedView
from ..sdk import HyCloud, bundles
from . import profile, threadstate
from .attrs import dir_attrs, file_attrs
from .handles import READ_AHEAD, CachedHandle, ReadHandle
from .sealed import SealedFiles, SealedHandle
from .watch import watch

WORKERS = 10  # libfuse's worker threads: at most this many, and none retires (its default maximum)
OPS = (
    "getattr readdir mkdir rmdir unlink rename create open read write truncate flush release fsync "
    "fsyncdir utimens chmod chown statfs"
).split()
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
        except PermissionError as err:  # an encrypted folder's key missing (encrypted/vaults.py)
            raise fuse.FuseOSError(errno.EACCES) from err

    return wrapped


@threadstate.keeping(OPS)
class HyCloudFuse(fuse.Operations):
    use_ns = True

    def __init__(
        self,
        client: HyCloud,
        read_ahead: int = READ_AHEAD,
        cache: WriteBack | None = None,
        cache_dir: str | None = None,
        cache_size: int = LIMIT,
        metadata_ttl: float = TTL_S,
    ) -> None:
        self.client, self.read_ahead = client, read_ahead
        self.meta = MetaCache(client, ttl=metadata_ttl)
        self.cache = cache or WriteBack(
            lambda pairs: bundles.put_files(client, pairs),
            Path(tempfile.mkdtemp(prefix="hycloud-mount-cache-", dir=cache_dir)),
            limit=cache_size,
            ttl=metadata_ttl,
            on_flushed=self._flushed,
        )
        self.cache.still_valid = self._still_valid
        self.cache.make_dir = lambda path: client.mkdir(path, parents=True)
        self.cache.dirs_made = lambda paths: self.meta.learn_dirs(paths)
        self._handles: dict[int, ReadHandle | CachedHandle | SealedHandle] = {}
        self.lost: list[str] | None = None  # set when unmounted: the paths that could not be sent
        self._finishing = threading.Lock()
        self.mounted = threading.Event()  # set by libfuse's INIT: the folder is mounted
        self.started = time.time()
        self._ids = itertools.count(1)
        self.encrypted = KnownRoots(client)  # which folders are encrypted: asked once, kept
        view = SealedView(client, self.encrypted, self.meta.listing_kept, metadata_ttl)
        self.sealed = SealedFiles(view, cache_dir)

    # --- encrypted folders: decrypted and sealed here (sealed.py), as stored without a key ----------
    def _inside(self, path: str, itself: bool = False) -> Located | None:
        """The encrypted folder `path` is in (or is, with `itself`) and this mount has its key,
        from what is known and the listings kept: no request."""
        return None if self._plain(path, itself) else self.sealed.view.sealed(path, itself)

    def _plain(self, path: str, itself: bool = False) -> bool:
        """Every folder above `path` (and `path` itself, with `itself`) is known to hold no folder
        header, so `path` is in no encrypted folder: what `SealedView.locate` concludes then,
        without normalising and listing every ancestor (half the time of a stat). False when any
        of them is unknown or encrypted: the view is asked."""
        known = self.encrypted.known
        folder = path if itself else path.rsplit("/", 1)[0] or "/"
        while known.get(folder) is False:
            if folder == "/":
                return True
            folder = folder.rsplit("/", 1)[0] or "/"
        return False

    def _sealed_write(self, path: str, what: str) -> Located | None:
        """Where a write of `path` lands when inside an encrypted folder (asked once per folder);
        without the folder's key, EACCES and a line on stderr: the mount would store plaintext."""
        where = self.encrypted.locate(path, itself=False)
        if where is None:
            return None
        if self.sealed.view.opened(where, path) is None:
            print(
                f"hycloud mount: refused {what} {path}: {where.root} is an encrypted folder and its key "
                "is not available (set HYCLOUD_PASSPHRASE or HYCLOUD_KEY_FILE for the mount)",
                file=sys.stderr,
            )
            raise fuse.FuseOSError(errno.EACCES)
        return where

    # --- metadata ----------------------------------------------------------------------------------
    def _still_valid(self, path: str, cached: Cached) -> bool:
        return still_valid(self.meta, path, cached)

    def _flushed(self, sent: list[tuple[str, Path]]) -> None:
        learn_sent(self.meta, sent)

    def _entry(self, path: str) -> dict | None:
        """A folder made here and not sent yet holds nothing in the cloud: no request for what is
        not in the cache below it (`git clone` stats many absent paths in its new folders)."""
        if self.cache.is_dir(os.path.dirname(path)):
            return None
        return self.meta.entry(path)

    def _maybe_in_cloud(self, path: str) -> bool | None:
        """Whether the cloud holds `path`, from what is cached alone (no request: a create does
        not wait on a listing); None when nothing cached tells (`_in_cloud` asks later, if ever)."""
        cached = self.cache.get(path)
        if cached is not None:
            return cached.in_cloud
        if self.cache.is_dir(os.path.dirname(path)):
            return False
        known = self.meta.known(path)
        return None if known is UNKNOWN else known is not None

    def _in_cloud(self, path: str, cached: Cached) -> bool:
        """`cached.in_cloud`, asked of the metadata cache the first time a removal or move needs it."""
        if cached.in_cloud is None:
            cached.in_cloud = self._entry(path) is not None
        return cached.in_cloud

    @errors_as_errno
    def getattr(self, path: str, fh: int | None = None) -> dict:
        """The mount's root answers from here: every tool that resolves a path (`git clone`,
        `realpath`) stats it, and asking the cloud cost each a request."""
        if path == "/":
            return dir_attrs(self.started)
        if self.cache.is_dir(path):
            return dir_attrs(time.time())
        cached = self.cache.pending(path)
        if cached is not None:
            st = os.stat(cached.local)
            return file_attrs(st.st_size, st.st_mtime)
        where = self._inside(path)
        entry = self._entry(path) if where is None else None  # a sent file's cached copy matches it
        if where is None and not self._plain(
            path
        ):  # the listing just read may show a header; a miss asks once
            where = self.sealed.view.sealed(path, ask=entry is None)
        if where is not None:
            return self._sealed_attrs(path, where)
        if entry is None:
            raise fuse.FuseOSError(errno.ENOENT)
        if entry["type"] == "dir":
            return dir_attrs(entry["mtime"])
        return file_attrs(entry["size"], entry["mtime"])

    def _sealed_attrs(self, path: str, where: Located) -> dict:
        found = self.sealed.attrs(path, where)
        if found is None:
            raise fuse.FuseOSError(errno.ENOENT)
        return found

    @errors_as_errno
    def readdir(self, path: str, fh: int) -> list[str]:
        where = self._inside(path, itself=True)
        listed = [] if self.cache.is_dir(path) or where is not None else self.meta.listing(path)
        where = where or self._inside(path, itself=True)  # this listing may hold a folder header
        if where is not None:
            return [".", "..", *self.sealed.names(where, path)]
        names = [entry["name"] for entry in listed]
        return [".", "..", *names, *self.cache.names_in(path, set(names))]

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
        """A cached file keeps the times set on it (`tar x`, `cp -p`): its upload carries them."""
        held = self.sealed.unsent(path)
        if held is not None:
            os.utime(held.local, ns=times) if times else os.utime(held.local)
            return 0
        cached = self.cache.current(path)
        if cached is not None:
            os.utime(cached.local, ns=times) if times else os.utime(cached.local)
        return 0

    # --- namespace changes -----------------------------------------------------------------------------
    @errors_as_errno
    def mkdir(self, path: str, mode: int) -> None:
        """Made locally: the cloud gets it with its first file sent, or when a move, a removal,
        fsyncdir or the unmount needs it."""
        where = self._sealed_write(path, "mkdir")
        if where is not None:
            return self.sealed.view.mkdir(where)
        self.cache.add_dir(path)
        self.encrypted.note(path, False)  # made here, plain
        self.meta.learn(
            path, {"name": os.path.basename(path), "type": "dir", "size": 0, "mtime": time.time()}
        )
        self.meta.empty(path)

    def fsyncdir(self, path: str, datasync: int, fh: int) -> None:
        self.cache.make_dirs(path)

    @errors_as_errno
    def rmdir(self, path: str) -> None:
        where = self._inside(path)
        if where is not None:
            return self.sealed.view.remove(where, folder=True)
        if self.cache.remove_dir(path):
            self.meta.removed(path)
            return
        self.cache.sync(self.cache.under(path))  # a folder with files not sent yet is not empty
        self.client.rmdir(path)
        self.meta.removed(path)

    @errors_as_errno
    def unlink(self, path: str) -> None:
        """An absent file is ENOENT from the metadata cache (`git clone` unlinks every object's
        path before it copies the object there): no request per file."""
        where = self._inside(path)
        if where is not None:
            return self.sealed.view.remove(where, folder=False)
        cached = self.cache.drop(path)
        if cached is not None and not self._in_cloud(path, cached):
            return  # never sent: nothing to remove in the cloud, nothing cached about it changes
        if cached is None and self._entry(path) is None:
            raise fuse.FuseOSError(errno.ENOENT)
        try:
            self.client.rm(path)
        except NotFoundError:
            if cached is None:
                raise
        self.meta.removed(path)

    @errors_as_errno
    def rename(self, old: str, new: str) -> None:
        """POSIX rename replaces an existing file at `new`. A file only in the cache moves there alone.
        Within one encrypted folder no chunk moves; across its edge EXDEV (mv copies, sealing)."""
        src, dst = self._inside(old), self._sealed_write(new, "rename into")
        if src is not None or dst is not None:
            return self._sealed_rename(old, new, src, dst)
        cached = self.cache.hold(old)  # not sent while we decide: it stays only in the cache
        try:
            if cached is not None and not self._in_cloud(old, cached):
                replaced = self.cache.drop(new, wait=False)  # its upload under way lands first
                sent = replaced is not None and (replaced.in_cloud or replaced.inflight)
                cached.in_cloud = sent or self._maybe_in_cloud(new)
                self.cache.move(old, new)
                return
        finally:
            self.cache.unhold(cached)
        self.cache.drop(new)
        target = self._entry(new)
        self.cache.make_dirs(old, os.path.dirname(new))  # folders not sent yet: made before the move
        self.cache.sync([old, *self.cache.under(old)])  # what is under way lands before the move
        if target is not None and target["type"] == "file":
            self.client.rm(new)
        self.client.mv(old, new)
        self.cache.move(old, new)
        self.meta.moved(old, new)

    def _sealed_rename(self, old: str, new: str, src: Located | None, dst: Located | None) -> None:
        if src is None or dst is None or src.root != dst.root:
            raise fuse.FuseOSError(errno.EXDEV)
        self.sealed.commit_under(old)
        self.sealed.view.move(src, dst, replace_dir=True)
        self.sealed.moved(old, new, dst)

    # --- content -----------------------------------------------------------------------------------------
    def _keep(self, handle: ReadHandle | CachedHandle | SealedHandle) -> int:
        fh = next(self._ids)
        self._handles[fh] = handle
        return fh

    def _cached(self, path: str, writer: bool, fetch: bool) -> CachedHandle:
        """A handle on the cached copy of `path`, made from the cloud's file when `fetch`; without
        `fetch` (create, O_TRUNC) nothing is asked of the cloud."""
        in_cloud: bool | None = (
            self.cache.get(path) is not None or self._entry(path) is not None
            if fetch
            else self._maybe_in_cloud(path)
        )
        fill = (lambda local: self.client.get(path, local)) if fetch and in_cloud else None
        return CachedHandle(self.cache, self.cache.open(path, in_cloud, writer, fill), writer)

    @errors_as_errno
    def create(self, path: str, mode: int, fi=None) -> int:
        where = self._sealed_write(path, "create")
        if where is not None:
            return self._keep(self.sealed.open(path, where, writer=True, fresh=True))
        self.meta.wrote(os.path.dirname(path) or "/")
        handle = self._cached(path, writer=True, fetch=False)
        handle.truncate(0)
        return self._keep(handle)

    @errors_as_errno
    def open(self, path: str, flags: int) -> int:
        writer = flags & os.O_ACCMODE != os.O_RDONLY
        where = self._sealed_write(path, "write") if writer else self._inside(path)
        if where is not None:
            fresh = bool(flags & os.O_TRUNC) and writer
            return self._keep(self.sealed.open(path, where, writer, fresh))
        if not writer and self.cache.current(path) is None:
            return self._keep(ReadHandle(self.client, path, self.read_ahead))
        handle = self._cached(path, writer, fetch=not flags & os.O_TRUNC)
        if writer and flags & os.O_TRUNC:
            handle.truncate(0)
        return self._keep(handle)

    @errors_as_errno
    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return self._handles[fh].read(size, offset)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        handle = self._handles[fh]
        if not isinstance(handle, CachedHandle | SealedHandle) or not handle.writer:
            raise fuse.FuseOSError(errno.EBADF)
        return handle.write(data, offset)

    @errors_as_errno
    def truncate(self, path: str, length: int, fh: int | None = None) -> None:
        handle = self._handles.get(fh) if fh is not None else None
        if isinstance(handle, CachedHandle | SealedHandle) and handle.writer:
            handle.truncate(length)
            return
        where = self._sealed_write(path, "truncate")
        if where is not None:
            sealed = self.sealed.open(path, where, writer=True, fresh=length == 0)
            try:
                sealed.truncate(length)
                sealed.commit()
            finally:
                sealed.close()
            return
        handle = self._cached(path, writer=True, fetch=length > 0)
        try:
            handle.truncate(length)
        finally:
            handle.close()

    @errors_as_errno
    def flush(self, path: str, fh: int) -> None:
        """close(): the bytes are in the local cache; the flusher sends them (fsync waits for that).
        A file of an encrypted folder is sealed and sent now, its error returned by close()."""
        handle = self._handles.get(fh)
        if isinstance(handle, SealedHandle):
            handle.commit()

    def release(self, path: str, fh: int) -> None:
        handle = self._handles.pop(fh, None)
        if isinstance(handle, SealedHandle):
            try:
                handle.commit()  # flush sent it unless it failed there (reported to close)
            except (HyCloudError, PermissionError) as err:
                print(f"hycloud mount: not sent: {handle.path}: {err}", file=sys.stderr)
        if handle is not None:
            handle.close()

    @errors_as_errno
    def fsync(self, path: str, datasync: int, fh: int) -> None:
        handle = self._handles.get(fh)
        if isinstance(handle, SealedHandle):
            return handle.commit()
        self.cache.sync([path])

    def init(self, path: str) -> None:
        self.mounted.set()

    def destroy(self, path: str) -> None:
        """Unmount (fusermount3 -u, SIGTERM, Ctrl-C): everything cached is sent before the process ends."""
        self.finish()

    def finish(self) -> list[str]:
        """Send everything cached, once (libfuse's exit and the unmount watcher may both ask);
        the paths that could not be sent."""
        with self._finishing:
            if self.lost is None:
                self.lost = self._send_sealed() + self.cache.stop()
                self.sealed.remove_copies()
                if self.lost:
                    print(f"hycloud mount: not sent: {', '.join(self.lost)}", file=sys.stderr)
            return self.lost

    def _send_sealed(self) -> list[str]:
        """Files of encrypted folders still open with changes: sealed and sent; those that failed."""
        lost = []
        for handle in [h for h in list(self._handles.values()) if isinstance(h, SealedHandle)]:
            try:
                handle.commit()
            except (HyCloudError, PermissionError):
                lost.append(handle.path)
        return lost


# mfusepy reads `create`'s signature at every call (to tell whether it takes the open flags):
# through the decorators above that took 250 µs a file created; kept ready, a few.
HyCloudFuse.create.__signature__ = inspect.signature(HyCloudFuse.create)  # type: ignore[attr-defined]


def _fuse_options(metadata_ttl: float) -> dict:
    """The kernel keeps entries, attributes and absent names (`negative_timeout`: git looks up many
    names that do not exist) as long as the mount's own metadata timeout: each of those answers
    costs a trip into this process otherwise. The mount's own changes keep them exact (the kernel
    updates its entries on create, rename, unlink, write and setattr made through it); another
    client's change is seen through the mount's listing refresh plus at most this timeout. A
    timeout of 0 asks the mount every time.

    `auto_cache`: the kernel keeps a file's pages from one open to the next while its size and
    mtime stay the same (libfuse compares them at open), so a file read again (git reads the
    index and each racily clean file at every command) costs no read request; a change, the
    mount's own or another client's once its attributes show it, drops them."""
    kernel = metadata_ttl
    options = {"attr_timeout": kernel, "entry_timeout": kernel, "negative_timeout": kernel}
    return options | {"auto_cache": True} | _threads()


def _threads() -> dict:
    """libfuse 3.14 logs `Ignoring invalid max threads value 4294967295` when `max_idle_threads`
    is left unset (its default is UINT_MAX): it is named. With `max_threads` (libfuse 3.12 on)
    equal to it no worker ever retires, so the Python thread states the workers keep
    (`threadstate.py`) stay bounded. Neither option exists in libfuse 2."""
    if fuse.fuse_version_major != 3:
        return {}
    return {"max_idle_threads": WORKERS} | ({"max_threads": WORKERS} if fuse.fuse_version_minor >= 12 else {})


def mount(
    client: HyCloud,
    mountpoint: str,
    read_ahead: int = READ_AHEAD,
    foreground: bool = True,
    cache_dir: str | None = None,
    cache_size: int = LIMIT,
    metadata_ttl: float = TTL_S,
) -> None:
    """Mount until unmounted (`fusermount3 -u DIR`) or interrupted. The write-back cache lives in
    a new folder under `cache_dir` (default: the system's temporary folder), removed once
    everything is sent; entries are trusted `metadata_ttl` seconds."""
    ops = HyCloudFuse(
        client, read_ahead, cache_dir=cache_dir, cache_size=cache_size, metadata_ttl=metadata_ttl
    )
    profile.from_env(ops, OPS)
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 PID`: every thread's stack on stderr
    watch(mountpoint, lambda: os._exit(1 if ops.finish() else 0), ops.mounted)
    try:
        fuse.FUSE(
            ops,
            mountpoint,
            foreground=foreground,
            fsname="hycloud",
            auto_unmount=True,  # fusermount3 unmounts when the process ends, even killed: no stale mount
            **_fuse_options(metadata_ttl),
        )
    except RuntimeError as err:  # libfuse refused: no /dev/fuse, no permission, already mounted...
        if ops.lost is None:  # ...unless it ran and ended on a signal (libfuse then reports an error)
            raise HyCloudError(
                f"cannot mount on {mountpoint}: {err}", code="mount-failed", status=400
            ) from err
    if ops.lost:
        raise HyCloudError(f"{len(ops.lost)} files not sent, kept in {ops.cache.folder}", code="not-sent")
