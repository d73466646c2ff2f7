"""The client's operation queue (seed 000 §III-C): while the controller answers 503/429 or the
client's own link is busy, operations wait on disk (`control.local_queue`, a journal that
survives a restart) and redundant ones are merged away (`control.elimination`: an upload followed
by another upload or a delete of the same path) before anything is sent.

An upload or delete names the version this device last agreed on at its path (`seen`): when
another device wrote the path meanwhile, nothing is overwritten or deleted; an upload keeps both
versions as sync does (the newer by mtime at the path, the other as a conflict copy beside it).

Every move names its destination as absent: a move onto a file replaces it (kept only as a
version), and another device may have written there since this one looked (a conflict copy of
the same second, a file at a rename's destination). Refused, the move tries the next free name
(`_first_free`), a bounded number of times, and never replaces."""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from hycloud_core.control.elimination import LocalOp
from hycloud_core.control.fop import OpKind
from hycloud_core.control.local_queue import LocalOperationQueue, link_congested
from hycloud_core.errors import ConflictError, HyCloudError, NotFoundError

from ..preconditions import ABSENT
from ..sdk import HyCloud
from ..versions import state_path
from .conflicts import CLOUD, conflict_name, this_device

OVERLOADED = (429, 503)
FIRST_WAIT, LONGEST_WAIT = 1.0, 30.0
WINDOW = 2.0  # seconds of recent transfers the link's load is measured over
MISMATCH = "version-mismatch"
DEFAULT_CAPACITY = 50e6 / 8  # bytes/s until measured: the paper's 50 Mbit/s client link
MAX_NAMES = 8  # names a move or conflict copy tries, each taken meanwhile, before it is failed


class LinkMeter:
    """The client's recent send rate against the link's measured capacity."""

    def __init__(self, capacity: float | None) -> None:
        self.capacity = capacity or DEFAULT_CAPACITY
        self._sent: deque[tuple[float, int]] = deque()
        self._lock = threading.Lock()

    def __call__(self, nbytes: int) -> None:
        with self._lock:
            self._sent.append((time.monotonic(), nbytes))

    def throughput(self) -> float:
        cutoff = time.monotonic() - WINDOW
        with self._lock:
            while self._sent and self._sent[0][0] < cutoff:
                self._sent.popleft()
            return sum(n for _, n in self._sent) / WINDOW

    def congested(self) -> bool:
        return link_congested(self.throughput(), self.capacity)


def new_op(
    kind: OpKind, path: str, creates: bool = False, dest: str | None = None, **data: object
) -> LocalOp:
    return LocalOp(uuid.uuid4().hex, kind, path, dest=dest, creates=creates, data=data)


class OperationQueue:
    """Sends operations at once on a clear path; holds and merges them while congested."""

    def __init__(
        self,
        client: HyCloud,
        name: str,
        directory: Path | None = None,
        on_sent: Callable[[LocalOp], None] = lambda op: None,
        seen: Callable[[LocalOp], str | None] = lambda op: None,
    ) -> None:
        self.client, self.seen = client, seen
        self.queue = LocalOperationQueue(directory or state_path().parent / "queues" / name)
        self.link = LinkMeter(client.store.rate("up"))
        self.on_sent = on_sent
        self.sent: list[LocalOp] = []
        self.failed: list[dict] = []
        self.submitted = len(self.queue.pending())  # held by an earlier run count as submitted
        self._wait, self._retry_at = FIRST_WAIT, 0.0

    def submit(self, op: LocalOp) -> None:
        self.submitted += 1
        self._refresh()
        for ready in self.queue.submit(op):
            if not self._send(ready):
                self.queue.submit(ready)  # the controller refused it: held until it recovers

    def pending(self) -> list[LocalOp]:
        return self.queue.pending()

    @property
    def eliminated(self) -> int:
        """Operations merged away before they were sent."""
        return self.submitted - len(self.sent) - len(self.failed) - len(self.pending())

    def flush(self) -> int:
        """Send what is held once the bottleneck has cleared; returns how many were sent."""
        self._refresh()
        done: list[str] = []
        for op in self.queue.ready_batch():
            if not self._send(op):
                break
            done.append(op.op_id)
        if done:
            self.queue.confirm(done)
        return len(done)

    def _refresh(self) -> None:
        overloaded = self.queue.controller_overloaded and time.monotonic() < self._retry_at
        self.queue.set_congestion(overloaded, self.link.congested())

    def _send(self, op: LocalOp) -> bool:
        """Carry out one operation; False when the controller is overloaded (nothing was done)."""
        try:
            self._perform(op)
        except HyCloudError as e:
            if e.status in OVERLOADED:
                self._retry_at, self._wait = time.monotonic() + self._wait, min(self._wait * 2, LONGEST_WAIT)
                self.queue.set_congestion(True, self.queue.link_congested)
                return False
            self.failed.append({"path": op.path, "kind": op.kind.value, "error": e.message})
            return True
        self._wait = FIRST_WAIT
        self.sent.append(op)
        self.on_sent(op)
        return True

    def _perform(self, op: LocalOp) -> None:
        client = self.client
        if op.kind is OpKind.UPLOAD:
            local = Path(str(op.data["local"]))
            if local.is_file():  # gone since: its delete follows in the queue
                self._upload(op, local)
        elif op.kind is OpKind.DELETE:
            self._delete(op)
        elif op.kind is OpKind.MKDIR:
            client.mkdir(op.path, parents=True)
        elif op.kind is OpKind.RMDIR:
            _quietly(lambda: client.rmdir(op.path), NotFoundError, ConflictError)
        elif op.kind is OpKind.MOVE:
            self._rename(op)
        else:
            raise ValueError(f"cannot queue a {op.kind.value}")

    def _upload(self, op: LocalOp, local: Path) -> None:
        st = local.stat()
        keep: dict[str, Any] = {
            "parents": True,
            "progress": self.link,
            "mtime": st.st_mtime,
            "mode": st.st_mode & 0o777,
        }
        try:
            self.client.put(local, op.path, expect=self.seen(op), **keep)
        except ConflictError as err:
            if err.code != MISMATCH:
                raise
            self._keep_both(op.path, local, keep)

    def _delete(self, op: LocalOp) -> None:
        """Gone here: gone in the cloud too, unless another device wrote it since (then it stays)."""
        try:
            self.client.rm(op.path, expect=self.seen(op))
        except NotFoundError:
            pass
        except ConflictError as err:
            if err.code != MISMATCH:
                raise

    def _rename(self, op: LocalOp) -> None:
        """To its destination if still free; another device wrote there since: beside it, under
        a conflict name of this device, so both files are kept."""
        assert op.dest is not None
        src, dest = op.path, op.dest

        def names() -> Iterator[str]:
            yield dest
            yield from _conflict_names(dest, this_device(), self._mtime(src))  # stat only if refused

        _first_free(lambda name: self.client.mv(src, name, expect=ABSENT), names())

    def _mtime(self, path: str) -> float:
        """A cloud file's mtime, which names its conflict copy (now, when the cloud has none)."""
        return float(self.client.stat(path).get("mtime") or time.time())

    def _keep_both(self, path: str, local: Path, keep: dict) -> None:
        """Another device wrote `path` since this one saw it: the newer by mtime stays there."""
        try:
            theirs = self.client.stat(path)
        except NotFoundError:
            self.client.put(local, path, expect=ABSENT, **keep)
            return
        if keep["mtime"] > theirs.get("mtime", 0):
            aside = _conflict_names(path, CLOUD, theirs.get("mtime", 0))
            _first_free(lambda name: self.client.mv(path, name, expect=ABSENT), aside)
            self.client.put(local, path, expect=ABSENT, **keep)
        else:
            mine = _conflict_names(path, this_device(), keep["mtime"])
            _first_free(lambda name: self.client.put(local, name, expect=ABSENT, **keep), mine)


def _conflict_names(path: str, device: str, mtime: float) -> Iterator[str]:
    """`conflict_name`'s candidates for one version: the plain name, then `-2`, `-3`, ..."""
    taken: set[str] = set()
    while True:
        name = conflict_name(path, device, mtime, taken)
        taken.add(name)
        yield name


def _first_free(place: Callable[[str], object], names: Iterable[str]) -> str:
    """Write under the first of `names` the cloud still holds nothing at (`place` sends it with
    expect=ABSENT). A name another device took since is refused, never replaced, and the next is
    tried; after MAX_NAMES refusals the last refusal is raised (the operation is failed)."""
    refused: ConflictError | None = None
    for name in itertools.islice(names, MAX_NAMES):
        try:
            place(name)
            return name
        except ConflictError as err:
            if err.code != MISMATCH:
                raise
            refused = err
    assert refused is not None
    raise refused


def _quietly(step: Callable[[], object], *errors: type[Exception]) -> None:
    try:
        step()
    except errors:
        pass
