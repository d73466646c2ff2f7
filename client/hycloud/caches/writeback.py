"""The mount's write-back cache: files written through the mount live in a local cache folder,
`close()` returns once the bytes are there, and a background flusher sends changed files to the
cloud, small ones many to a request (`sdk.bundles.put_files`), large ones with `put`.

Each cached file counts changes (`gen`) and the change last made durable (`flushed`). The flusher
waits `delay` seconds after a file is closed, so files closed together (`tar x`, `git add`)
travel in the same bundles. A file still open for writing is only sent when someone asks for it
(`sync`: fsync, rename of a folder, unmount); lock and temporary files (`*.lock`, `tmp_*`) wait
`LINGER_S` after their last change, as they are usually renamed or removed by then. A file
changed while its upload is in flight is sent again, so the cloud ends with the last bytes
written. `sync` blocks until a file's changes up to the call are durable, and raises the upload's
error if it failed.

The cache is bounded: after a close, when the cached bytes (a running total of the sizes files
had when last closed: a close costs one stat, not one per cached file) exceed `limit`, files
already durable and not open are dropped (least recently used first); when that is not enough,
the close waits until the flusher has sent everything, then drops again.
"""

from __future__ import annotations

import itertools
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from hycloud_core.errors import ConflictError, HyCloudError, error_from_body

from . import threads

Upload = Callable[[Sequence[tuple[Path, str]]], list[dict]]
DELAY_S = 0.3  # how long the flusher gathers closed files before sending them
RETRY_S = 2.0  # a failed upload is tried again after this long
LIMIT = 2 * 1024**3
LINGER_S = 3.0  # lock and temporary files wait this long after their last change (see _lingers)
TTL_S = 2.0  # a durable file answers from the cache this long after its last use (as MetaCache)


@dataclass(eq=False)
class Cached:
    """One file of the cache: its local copy and how far its changes reached the cloud."""

    local: Path
    in_cloud: bool | None  # the cloud holds some version at this path (so removing it needs a
    # request); None: not known yet (asked when a removal or a move needs it)
    gen: int = 0
    flushed: int = 0
    writers: int = 0
    opens: int = 0
    inflight: bool = False
    gone: bool = False  # removed from the cache: no upload will come
    held: int = 0  # a rename is deciding about it: not sent meanwhile
    error: HyCloudError | None = None
    retry_at: float = 0.0
    used: float = field(default_factory=time.monotonic)
    counted: int = 0  # its bytes in the cache's running total (its size when last closed)

    @property
    def dirty(self) -> bool:
        return self.gen > self.flushed

    @property
    def size(self) -> int:
        try:
            return self.local.stat().st_size
        except FileNotFoundError:
            return 0


class WriteBack:
    def __init__(
        self,
        upload: Upload,
        folder: Path,
        limit: int = LIMIT,
        delay: float = DELAY_S,
        ttl: float = TTL_S,
        on_flushed: Callable[[list[tuple[str, Path]]], None] = lambda sent: None,
    ) -> None:
        self.upload, self.folder, self.limit, self.delay, self.ttl = upload, folder, limit, delay, ttl
        self.on_flushed = on_flushed
        self.still_valid: Callable[[str, Cached], bool] = lambda path, entry: False
        self.make_dir: Callable[[str], object] = lambda path: None
        # folders now in the cloud (made by an upload's parents or by make_dir): the metadata cache
        # learns them before they stop answering from `dirs`
        self.dirs_made: Callable[[list[str]], None] = lambda paths: None
        self.dirs: set[str] = set()  # folders made through the mount, not in the cloud yet
        self.files: dict[str, Cached] = {}
        self._in_folder: dict[str, set[str]] = {}  # folder -> cached paths in it (a readdir walks no others)
        self._bytes = 0  # the cached files' sizes as of their last close: no stat of every file per close
        self._cond = threading.Condition(threading.RLock())
        self._urgent: set[str] = set()
        self._sending: set[str] = set()  # the paths of the batch being sent (of kept or dropped files)
        self._stopping = False
        self._ids = itertools.count(1)
        folder.mkdir(parents=True, exist_ok=True)
        self._thread = threads.start("hycloud-flusher", self._run)

    # --- the cache's entries ---------------------------------------------------------------------
    def get(self, path: str) -> Cached | None:
        with self._cond:
            return self.files.get(path)

    def current(self, path: str) -> Cached | None:
        """The cached file if it answers for `path`: changed, open, used within `ttl`, or still
        what the cloud holds (`still_valid`: same size and mtime). Else it is dropped, so that
        another client's change to it is seen."""
        with self._cond:
            entry = self.files.get(path)
            if entry is None or entry.dirty or entry.inflight or entry.opens:
                return entry
            if time.monotonic() - entry.used <= self.ttl:
                return entry
        valid = self.still_valid(path, entry)  # outside the lock: this may ask the cloud
        with self._cond:
            if self.files.get(path) is not entry or valid or entry.dirty or entry.inflight or entry.opens:
                return self.files.get(path)
            self._remove(path)
            entry.local.unlink(missing_ok=True)
            return None

    def pending(self, path: str) -> Cached | None:
        """The cached file if it holds what the cloud may not have yet (changed, in flight, open)."""
        with self._cond:
            entry = self.files.get(path)
            return entry if entry is not None and (entry.dirty or entry.inflight or entry.opens) else None

    def names_in(self, folder: str, listed: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
        """The names the cache holds in `folder` besides `listed` (names a listing gave already);
        each file checked by `current` outside the lock (it may ask the cloud, and every open and
        close waits on that lock)."""
        prefix = folder.rstrip("/") + "/"
        with self._cond:
            inside = [p for p in self._in_folder.get(folder, ()) if p in self.files]
            dirs = [d[len(prefix) :] for d in self.dirs if os.path.dirname(d) == folder]
        dirs = [name for name in dirs if name not in listed]
        inside = [p for p in inside if p[len(prefix) :] not in listed]
        return [p[len(prefix) :] for p in inside if self.current(p) is not None] + dirs

    def _add(self, path: str, entry: Cached) -> None:
        self.files[path] = entry
        self._in_folder.setdefault(os.path.dirname(path), set()).add(path)

    def _remove(self, path: str) -> Cached:
        entry = self.files.pop(path)
        self._in_folder.get(os.path.dirname(path), set()).discard(path)
        self._uncount(entry)
        return entry

    # --- folders: made in the cloud with their first file (parents), or when something needs them --
    def add_dir(self, path: str) -> None:
        with self._cond:
            self.dirs.add(path)

    def is_dir(self, path: str) -> bool:
        with self._cond:
            return path in self.dirs

    def remove_dir(self, path: str) -> bool:
        """Remove a folder never sent; False if it is not such a folder. Raises if not empty."""
        with self._cond:
            if path not in self.dirs:
                return False
            inside = path + "/"
            if any(p.startswith(inside) for p in self.files) or any(d.startswith(inside) for d in self.dirs):
                raise ConflictError(f"{path} is not empty", code="not-empty")
            self.dirs.discard(path)
            return True

    def make_dirs(self, *paths: str) -> None:
        """Make in the cloud the unsent folders at, under or above `paths` (before a move or a removal)."""
        with self._cond:
            wanted = sorted(
                d
                for d in self.dirs
                for p in paths
                if d == p or d.startswith(p.rstrip("/") + "/") or p.startswith(d + "/")
            )
        for folder in wanted:
            self.make_dir(folder)
            with self._cond:
                self.dirs_made([folder])
                self.dirs.discard(folder)

    def under(self, folder: str) -> list[str]:
        prefix = folder.rstrip("/") + "/"
        with self._cond:
            return [p for p in self.files if p.startswith(prefix)]

    def open(
        self, path: str, in_cloud: bool | None, writer: bool, fill: Callable[[Path], object] | None = None
    ) -> Cached:
        """The cached file at `path`, made (filled by `fill`, else empty) if not cached yet; counted open."""
        with self._cond:
            entry = self.files.get(path)
            if entry is not None:
                return self._opened(entry, writer)
        local = self.folder / f"f{next(self._ids)}"
        fill(local) if fill is not None else local.touch()  # outside the lock: this may download
        with self._cond:
            entry = self.files.get(path)
            if entry is None:
                entry = Cached(local, in_cloud)
                self._add(path, entry)
                self._count(entry)
            else:
                local.unlink()
            return self._opened(entry, writer)

    def _opened(self, entry: Cached, writer: bool) -> Cached:
        entry.opens += 1
        entry.writers += writer
        entry.used = time.monotonic()
        return entry

    def changed(self, entry: Cached) -> None:
        with self._cond:
            entry.gen += 1
            entry.used = time.monotonic()

    def closed(self, entry: Cached, writer: bool) -> None:
        """A handle was released: the file may be sent now; the cache is kept within its limit."""
        with self._cond:
            entry.opens -= 1
            entry.writers -= writer
            entry.used = time.monotonic()
            self._count(entry)
            if entry.dirty:
                self._cond.notify_all()
        self._within_limit()

    def drop(self, path: str, wait: bool = True) -> Cached | None:
        """Forget `path` (after its in-flight upload ends); its local copy goes when unused.
        Without `wait` (a file renamed onto `path`: git's `index.lock` onto `index`) it is
        forgotten at once: the upload under way lands and its copy goes then. The flusher sends
        one batch at a time, so the next upload of `path` starts after it has landed and the
        cloud still ends with the last bytes written; a removal or move of `path` in the cloud
        waits for it too (`drop` with `wait`, `hold`, `sync`)."""
        with self._cond:
            entry = self.files.get(path)
            if entry is None:
                return None
            if wait:
                self._cond.wait_for(partial(self._not_sending, [path]))
            self._remove(path)
            self._urgent.discard(path)
            entry.gone = True
            self._cond.notify_all()
            if not entry.inflight:
                entry.local.unlink(missing_ok=True)  # open handles keep their descriptor
            return entry

    def hold(self, path: str) -> Cached | None:
        """The cached file at `path`, once no upload of it is in flight, kept from the flusher
        until `unhold`."""
        with self._cond:
            entry = self.files.get(path)
            if entry is not None:
                self._cond.wait_for(partial(self._not_sending, [path]))
                entry.held += 1
            return entry

    def unhold(self, entry: Cached | None) -> None:
        if entry is not None:
            with self._cond:
                entry.held -= 1
                self._cond.notify_all()

    def move(self, old: str, new: str) -> None:
        """`old` and everything under it are cached as `new` from now on."""
        with self._cond:
            for path in [old, *self.under(old)]:
                entry = self.files.get(path)
                if entry is None:
                    continue
                self._cond.wait_for(partial(_idle, entry))
                moved = self.files[path]
                self._remove(path)
                self._add(new + path[len(old) :], moved)
                self._count(moved)

    # --- durability --------------------------------------------------------------------------------
    def sync(self, paths: Iterable[str]) -> None:
        """Block until the changes made so far to `paths` are in the cloud, and no upload of them is
        under way (a dropped file's, which a move or removal in the cloud must follow); raise an
        upload's error."""
        paths = list(paths)
        with self._cond:
            wanted = {p: (e, e.gen) for p in paths if (e := self.files.get(p)) is not None and e.dirty}
            for entry, _ in wanted.values():
                entry.retry_at, entry.error = 0.0, None
            self._urgent.update(wanted)
            self._cond.notify_all()
            for entry, gen in wanted.values():
                self._cond.wait_for(partial(_landed, entry, gen))
                if entry.flushed < gen and entry.error is not None:
                    raise entry.error
            self._cond.wait_for(partial(self._not_sending, paths))

    def _not_sending(self, paths: list[str]) -> bool:
        return self._sending.isdisjoint(paths)

    def sync_all(self) -> None:
        with self._cond:
            paths = list(self.files)
        self.sync(paths)

    def stop(self) -> list[str]:
        """Send everything, stop the flusher; the paths that could not be sent (their copies kept)."""
        try:
            self.sync_all()
            self.make_dirs("/")
        except HyCloudError:
            pass
        self.halt()
        with self._cond:
            lost = [p for p, e in self.files.items() if e.dirty]
        if not lost:
            shutil.rmtree(self.folder, ignore_errors=True)
        return lost

    def halt(self, timeout: float = 60.0) -> None:
        """End the flusher, sending nothing more: what is unsent stays in the cache folder."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join(timeout=timeout)

    # --- the bound ------------------------------------------------------------------------------------
    def cached_bytes(self) -> int:
        """The cached files' bytes, as of their last close (kept as a running total)."""
        with self._cond:
            return self._bytes

    def _count(self, entry: Cached) -> None:
        size = entry.size
        self._bytes += size - entry.counted
        entry.counted = size

    def _uncount(self, entry: Cached) -> None:
        self._bytes -= entry.counted
        entry.counted = 0

    def _within_limit(self) -> None:
        if self._evict() <= self.limit:
            return
        try:
            self.sync_all()
        except HyCloudError:
            pass  # what failed stays cached: it cannot be dropped before it is in the cloud
        self._evict()

    def _evict(self) -> int:
        """Drop durable, unused files, least recently used first, while over the limit; the bytes left."""
        with self._cond:
            if self._bytes <= self.limit:
                return self._bytes  # the usual case: no walk of every file at each close
            for path, entry in sorted(self.files.items(), key=lambda item: item[1].used):
                if self._bytes <= self.limit:
                    break
                if not entry.dirty and not entry.inflight and entry.opens == 0:
                    self._remove(path)
                    entry.local.unlink(missing_ok=True)
            return self._bytes

    # --- the flusher ----------------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stopping or bool(self._due()), timeout=RETRY_S)
                if self._stopping:
                    return
                if not self._urgent:
                    self._cond.wait_for(lambda: self._stopping or bool(self._urgent), timeout=self.delay)
                batch = [(p, e, e.gen) for p, e in self._due()]
                for _, entry, _ in batch:
                    entry.inflight = True
                self._sending = {p for p, _, _ in batch}
                self._urgent.difference_update(p for p, _, _ in batch)
            if batch:
                self._send(batch)

    def _due(self) -> list[tuple[str, Cached]]:
        now = time.monotonic()
        return [
            (p, e)
            for p, e in self.files.items()
            if e.dirty
            and not e.inflight
            and not e.held
            and e.retry_at <= now
            and (e.writers == 0 or p in self._urgent or self._stopping)
            and (not _lingers(p) or now - e.used >= LINGER_S or p in self._urgent or self._stopping)
        ]

    def _send(self, batch: list[tuple[str, Cached, int]]) -> None:
        try:
            results = self.upload([(entry.local, path) for path, entry, _ in batch])
        except HyCloudError as err:
            results = [{"status": "error", "error": err.message, "code": err.code} for _ in batch]
        except Exception as err:  # never let the flusher die: the files stay dirty and are retried
            print(f"hycloud mount: upload failed: {err!r}", file=sys.stderr)
            results = [{"status": "error", "error": str(err), "code": "upload-failed"} for _ in batch]
        with self._cond:
            for (path, entry, gen), result in zip(batch, results, strict=True):
                entry.inflight = False
                if entry.gone:
                    entry.local.unlink(missing_ok=True)  # dropped while sent (drop without wait)
                if result.get("status") == "ok":
                    made = [d for d in _parents(path) if d in self.dirs]  # made by the upload (parents)
                    self.dirs_made(made)
                    self.dirs.difference_update(made)
                    entry.flushed, entry.in_cloud, entry.error = max(entry.flushed, gen), True, None
                else:
                    entry.error = _error(path, result)
                    entry.retry_at = time.monotonic() + RETRY_S
            # told before anyone waiting runs on: a rename's forget must come after this learn
            self._sending = set()
            self.on_flushed([(p, e.local) for p, e, _ in batch if not e.dirty and not e.gone])
            self._cond.notify_all()


def _error(path: str, result: dict) -> HyCloudError:
    body = {"error": {"code": result.get("code", "failed"), "message": f"{path}: {result.get('error')}"}}
    return error_from_body(int(result.get("http_status", 500)), body)


def _lingers(path: str) -> bool:
    """A lock or temporary file (git's `index.lock`, `tmp_obj_*`): renamed or removed within
    moments of its close, so it is kept back `LINGER_S` (sent, it would make the rename wait for
    its upload, then move it in the cloud)."""
    name = path.rsplit("/", 1)[-1]
    return name.endswith(".lock") or name.startswith("tmp_")


def _idle(entry: Cached) -> bool:
    return not entry.inflight


def _landed(entry: Cached, gen: int) -> bool:
    """The change `gen` is durable, or cannot become so (failed, or the file was removed)."""
    return entry.flushed >= gen or entry.error is not None or entry.gone


def _parents(path: str) -> list[str]:
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]
