"""`hycloud sync --watch`: after one sync, local changes (watchdog) feed the operation queue.

The first event after a quiet spell wakes the loop at once; the events of the next SETTLE
seconds (the rest of an editor's save: write, rename, chmod) are merged with it
(`control.elimination`) before they reach the queue, so a file written and deleted within that
burst costs no request, and a change is on its way within SETTLE of being made rather than
within a fixed tick. Every TICK the queue is flushed even when nothing happened; while the
controller or the link is congested it holds operations on disk and keeps merging.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from hycloud_core import content
from hycloud_core.control.elimination import Eliminator, LocalOp
from hycloud_core.control.fop import OpKind

from ..sdk import HyCloud
from .diff import full_path, merkle_of
from .filters import PathFilter
from .queue import OperationQueue, new_op
from .state import BaseEntry, SyncState, pair_id

TICK = 0.5  # the queue is flushed at least this often (operations held while congested)
SETTLE = 0.05  # after a first event, the burst gathered with it before it is sent
IGNORED_SUFFIXES = (".hycloud-part",)


class Changes(FileSystemEventHandler):
    """Turns watchdog events under the local root into queued operations at remote paths."""

    def __init__(self, local_root: Path, remote_root: str, keep: PathFilter, known: set[str]) -> None:
        self.local_root, self.remote_root, self.keep, self.known = (
            local_root.resolve(),
            remote_root,
            keep,
            known,
        )
        self._ops: list[LocalOp] = []
        self._lock = threading.Lock()
        self.arrived = threading.Event()  # set by an event, cleared when drained

    def drain(self) -> tuple[list[LocalOp], int]:
        """The tick's operations, merged, and how many were merged away."""
        with self._lock:
            ops, self._ops = self._ops, []
            self.arrived.clear()
        merged = Eliminator()
        for op in ops:
            merged.push(op)
        return merged.pending, len(ops) - len(merged.pending)

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        ops = self._ops_for(event)
        with self._lock:
            self._ops += ops
            if ops:
                self.arrived.set()

    def _ops_for(self, event: FileSystemEvent) -> list[LocalOp]:
        src = self._rel(event.src_path, event.is_directory)
        if event.event_type == "moved":
            dest = self._rel(event.dest_path, event.is_directory)
            return [
                *self._gone(src, event.is_directory),
                *self._here(dest, event.dest_path, event.is_directory),
            ]
        if event.event_type == "deleted":
            return self._gone(src, event.is_directory)
        return self._here(src, event.src_path, event.is_directory)

    def _here(self, rel: str | None, local: str | bytes, is_dir: bool) -> list[LocalOp]:
        if rel is None:
            return []
        if is_dir:
            return [new_op(OpKind.MKDIR, full_path(self.remote_root, rel))]
        creates = rel not in self.known
        self.known.add(rel)
        return [
            new_op(
                OpKind.UPLOAD, full_path(self.remote_root, rel), creates=creates, local=str(local), rel=rel
            )
        ]

    def _gone(self, rel: str | None, is_dir: bool) -> list[LocalOp]:
        if rel is None:
            return []
        self.known.discard(rel)
        kind = OpKind.RMDIR if is_dir else OpKind.DELETE
        return [new_op(kind, full_path(self.remote_root, rel), rel=rel)]

    def _rel(self, path: str | bytes, is_dir: bool) -> str | None:
        """The path relative to the root, or None when it is outside, the root itself or filtered out."""
        local = Path(path.decode() if isinstance(path, bytes) else path)
        try:
            rel = local.relative_to(self.local_root).as_posix()
        except ValueError:
            return None
        if rel in ("", ".") or local.name.endswith(IGNORED_SUFFIXES) or local.is_symlink():
            return None
        return rel if (self.keep.keeps_dir(rel) if is_dir else self.keep.keeps_file(rel)) else None


def watch(
    client: HyCloud,
    local_root: Path,
    remote_root: str,
    keep: PathFilter,
    seconds: float | None,
    on_sent: Callable[[LocalOp], None] = lambda op: None,
    ready: Callable[[], None] = lambda: None,
) -> dict:
    """Watch until `seconds` pass (None: until Ctrl-C); returns what was sent and what is still held."""
    pair = pair_id(client.http.base, client.store.user, remote_root, local_root)
    state = SyncState(pair)
    changes = Changes(local_root, remote_root, keep, set(state.base()))

    def sent(op: LocalOp) -> None:
        _record(state, remote_root, op)
        on_sent(op)

    queue = OperationQueue(client, pair, on_sent=sent, seen=lambda op: _seen(state, op))
    observer = Observer()
    observer.schedule(changes, str(local_root), recursive=True)
    observer.start()
    merged = 0
    ready()
    try:
        deadline = None if seconds is None else time.monotonic() + seconds
        while deadline is None or time.monotonic() < deadline:
            left = TICK if deadline is None else min(TICK, max(deadline - time.monotonic(), 0.0))
            if changes.arrived.wait(left):
                time.sleep(SETTLE)  # the rest of the burst is merged with its first event
            merged += _feed(changes, queue)
            queue.flush()
    except KeyboardInterrupt:
        pass
    finally:
        observer.stop()
        observer.join(timeout=5)
        merged += _feed(changes, queue)
        queue.flush()
        state.close()
    return {
        "sent": [{"kind": op.kind.value, "path": op.path} for op in queue.sent],
        "held": [{"kind": op.kind.value, "path": op.path} for op in queue.pending()],
        "failed": queue.failed,
        "eliminated": merged + queue.eliminated,
    }


def flush_held(client: HyCloud, local_root: Path, remote_root: str) -> int:
    """Send what an earlier watch still held (the queue outlives the process); before the first
    sync, so an upload held then is not sent after the sync sent it already."""
    pair = pair_id(client.http.base, client.store.user, remote_root, local_root)
    state = SyncState(pair)
    try:
        queue = OperationQueue(
            client, pair, on_sent=lambda op: _record(state, remote_root, op), seen=lambda op: _seen(state, op)
        )
        return queue.flush() if queue.pending() else 0
    finally:
        state.close()


def _feed(changes: Changes, queue: OperationQueue) -> int:
    ops, merged = changes.drain()
    for op in ops:
        queue.submit(op)
    return merged


def _seen(state: SyncState, op: LocalOp) -> str | None:
    """The version this device last agreed on at the operation's path: what it may replace."""
    rel = op.data.get("rel")
    return state.agreed_version(rel) if isinstance(rel, str) else None


def _record(state: SyncState, root: str, op: LocalOp) -> None:
    """Keep the sync base in step, so the next `hycloud sync` sees these as agreed."""
    rel = op.data.get("rel")
    if not isinstance(rel, str):
        return
    if op.kind is OpKind.DELETE:
        state.record(rel, None)
    elif op.kind is OpKind.UPLOAD and Path(str(op.data["local"])).is_file():
        local = Path(str(op.data["local"]))
        digest = content.hash_file(local)[0]
        state.record(rel, BaseEntry(merkle_of(digest), digest, local.stat().st_mtime))
