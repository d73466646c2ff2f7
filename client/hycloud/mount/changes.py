"""The native mount's write-back: the changes its daemon made to the local copy, applied to the
cloud in the order they were made.

Files written are gathered for `delay` seconds and sent many to a request (`bundles.put_files`);
a file made and then renamed or removed before it was sent costs no request at all (git's
`tmp_obj_*` files, `index.lock`). A move, removal or folder removal of something the cloud holds
is sent once the files gathered before it are. `sync` returns once every change told before it
is in the cloud, with the paths that could not be sent; `sync(path)` (fsync) once the moves and
removals told before it are and `path` itself is, the rest left to gather.
"""

from __future__ import annotations

import os
import queue
import stat
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hycloud_core.errors import HyCloudError, NotFoundError

from ..caches import threads

Upload = Callable[[Sequence[tuple[Path, str]]], list[dict]]
DELAY_S = 0.3  # how long files closed together are gathered (`tar x`, `git add`)
BATCH = 500  # files per upload call at most
BACKGROUND_NICE = 10  # the sending thread yields the CPU to the work it follows (git, a build)


@dataclass
class _Barrier:
    only: str | None = None  # a file or folder (fsync), or None: everything
    done: threading.Event = field(default_factory=threading.Event)


class Changes:
    def __init__(self, client, local: Path, upload: Upload, delay: float = DELAY_S) -> None:
        self.client, self.local, self.upload, self.delay = client, local, upload, delay
        self.in_cloud: set[str] = set()  # paths the cloud holds (listed, sent, moved there)
        self.new_dirs: set[str] = set()  # folders made here, not in the cloud yet
        self.pending: dict[str, None] = {}  # files to send, in the order written
        self.failed: dict[str, str] = {}  # path -> why it could not be sent
        # a file is in the cloud as it was at this stat (taken before the upload read it)
        self.on_sent: Callable[[str, os.stat_result], None] = lambda path, st: None
        self._queue: queue.Queue = queue.Queue()
        self._structural = 0  # moves and removals told, not applied yet
        self._lock = threading.Lock()
        self._thread = threads.start("hycloud-native-changes", self._run)

    # --- from the daemon ---------------------------------------------------------------------------
    def listed(self, paths: Iterable[str]) -> None:
        with self._lock:
            self.in_cloud.update(paths)

    def tell(self, op: str, path: str, to: str = "") -> None:
        if op in ("mv", "rm", "rmdir"):
            with self._lock:
                self._structural += 1
        self._queue.put((op, path, to))

    def clean(self, path: str) -> bool:
        """The cloud holds `path` as it is here (sent or listed, no change waiting)."""
        with self._lock:
            return path in self.in_cloud and path not in self.pending and path not in self.failed

    def gone(self, path: str) -> None:
        """The cloud no longer holds `path` (another client removed it)."""
        with self._lock:
            self.in_cloud.discard(path)

    def moves_waiting(self) -> bool:
        with self._lock:
            return self._structural > 0

    def sync(self, only: str | None = None) -> dict[str, str]:
        """Block until every change told so far is applied (`only`: every move and removal, and
        the file or folder `only`); the paths that failed, with why."""
        barrier = _Barrier(only)
        self._queue.put(barrier)
        barrier.done.wait()
        return dict(self.failed)

    def stop(self) -> dict[str, str]:
        """Send everything (failed files tried once more), make the empty folders; stop."""
        with self._lock:
            self.pending.update(dict.fromkeys(self.failed))
            self.failed.clear()
        failed = self.sync()
        self._queue.put(None)
        self._thread.join(timeout=60)
        return failed

    # --- the worker ----------------------------------------------------------------------------------
    def _run(self) -> None:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)
        while True:
            try:
                item = self._queue.get(timeout=self.delay if self.pending else None)
            except queue.Empty:
                self._send()
                continue
            if item is None:
                return
            if isinstance(item, _Barrier):
                self._send([item.only] if item.only is not None else None)
                self._make_dirs(item.only)
                item.done.set()
                continue
            try:
                self._apply(*item)
            except Exception as err:  # never let the worker die: the change is reported
                self.failed[item[1]] = f"{item[0]}: {err}"
                print(f"hycloud mount: {item[0]} {item[1]}: {err}", file=sys.stderr)
            finally:
                if item[0] in ("mv", "rm", "rmdir"):
                    with self._lock:
                        self._structural -= 1

    def _apply(self, op: str, path: str, to: str) -> None:
        if op == "put":
            self.pending[path] = None
            if len(self.pending) >= BATCH:
                self._send()
        elif op == "mkdir":
            self.new_dirs.add(path)
        elif op == "rm":
            self.pending.pop(path, None)
            self.failed.pop(path, None)
            if path in self.in_cloud:
                self._send()  # a file sent before it was removed stays removed
                _absent_ok(lambda: self.client.rm(path))
                self.in_cloud.discard(path)
        elif op == "rmdir":
            if path in self.in_cloud:
                self._send()
                _absent_ok(lambda: self.client.rmdir(path))
            self._rename_under(path, None)
        elif op == "mv":
            self._move(path, to)

    def _move(self, old: str, new: str) -> None:
        """Only here (a new file or folder nothing of which was sent): renamed here alone."""
        if old not in self.in_cloud and not any(_under(p, old) for p in self.in_cloud):
            self._rename_under(old, new)
            return
        self._send()
        self._make_dirs()
        if new in self.in_cloud and new not in self.pending and self._is_dir(new):
            _absent_ok(lambda: self.client.rmdir(new))  # POSIX: a move onto an empty folder
        self.client.mv(old, new)
        self._rename_under(old, new)

    def _is_dir(self, path: str) -> bool:
        return (self.local / path.lstrip("/")).is_dir()

    def _rename_under(self, old: str, new: str | None) -> None:
        """Every record of `old` and under it now names `new` (None: forgotten)."""

        def moved(path: str) -> str | None:
            if not _under(path, old):
                return path
            return None if new is None else new + path[len(old) :]

        self.pending = {m: None for p in self.pending if (m := moved(p)) is not None}
        self.in_cloud = {m for p in self.in_cloud if (m := moved(p)) is not None}
        self.new_dirs = {m for p in self.new_dirs if (m := moved(p)) is not None}
        self.failed = {m: why for p, why in self.failed.items() if (m := moved(p)) is not None}

    def _send(self, only: list[str] | None = None) -> None:
        """Every file waiting, or those of `only` that wait."""
        while waiting := list(self.pending) if only is None else [p for p in only if p in self.pending]:
            paths = waiting[:BATCH]
            for path in paths:
                del self.pending[path]
            # stat before the upload reads them (on_sent); written, then gone before its turn
            # (removed, or moved when it was in the cloud): skipped
            stats = {p: st for p in paths if (st := _file_stat(self.local / p.lstrip("/"))) is not None}
            if stats:
                self._upload(stats)

    def _upload(self, stats: dict[str, os.stat_result]) -> None:
        batch = list(stats)
        try:
            results = self.upload([(self.local / p.lstrip("/"), p) for p in batch])
        except HyCloudError as err:
            results = [{"status": "error", "error": err.message} for _ in batch]
        for path, result in zip(batch, results, strict=True):
            if result.get("status") == "ok":
                self.failed.pop(path, None)
                self.in_cloud.update([path, *_parents(path)])
                self.new_dirs.difference_update(_parents(path))
                self.on_sent(path, stats[path])
            else:
                self.failed[path] = str(result.get("error"))
                print(f"hycloud mount: not sent: {path}: {result.get('error')}", file=sys.stderr)

    def _make_dirs(self, only: str | None = None) -> None:
        """Folders made here with nothing sent in them yet (or `only`, if it is one): made in the
        cloud, parents first."""
        dirs = self.new_dirs if only is None else self.new_dirs & {only}
        for path in sorted(dirs, key=lambda p: p.count("/")):
            if path in self.new_dirs:
                self.client.mkdir(path, parents=True)
                self.in_cloud.update([path, *_parents(path)])
                self.new_dirs.difference_update([path, *_parents(path)])


def _file_stat(path: Path) -> os.stat_result | None:
    """`path`'s stat if it is a file (as Path.is_file, with the stat kept)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _parents(path: str) -> list[str]:
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def _absent_ok(call: Callable[[], object]) -> None:
    try:
        call()
    except NotFoundError:
        pass
