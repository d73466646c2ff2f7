"""The client's Local Operation Queue, kept on disk (seed 000 §III-C).

While the controller reports overload or the client's own link is congested, requests are held
here and merged by :class:`~hycloud_core.control.elimination.Eliminator`; when the bottleneck
clears they go out as one batch. The queue must survive a restart, so it is an append-only
JSON-lines journal: a ``snapshot`` line holding the pending list, then one ``push`` line per
queued request. Replaying the pushes through the eliminator rebuilds exactly the state in
memory. A batch stays in the journal until :meth:`LocalOperationQueue.confirm`, so a crash while
sending re-sends it (the controller ignores operation ids it has seen). A torn last line from a
crash mid-write is ignored.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from hycloud_core.atomic import atomic_write
from hycloud_core.control.elimination import Eliminator, LocalOp

JOURNAL_NAME = "local-ops.jsonl"
DEFAULT_LINK_THRESHOLD = 0.9


def link_congested(throughput: float, capacity: float, threshold: float = DEFAULT_LINK_THRESHOLD) -> bool:
    """The client's link counts as congested above ``threshold`` of its measured capacity."""
    return capacity > 0 and throughput >= threshold * capacity


class LocalOperationQueue:
    def __init__(self, directory: str | os.PathLike[str], fsync: bool = True) -> None:
        self.path = Path(directory) / JOURNAL_NAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fsync = fsync
        self.controller_overloaded = False
        self.link_congested = False
        pending, torn = _replay(self.path)
        self._queue = Eliminator(pending)
        if torn:
            self._compact()  # later appends must not follow a broken line

    @property
    def holding(self) -> bool:
        return self.controller_overloaded or self.link_congested

    def set_congestion(self, controller_overloaded: bool, link_congested: bool) -> None:
        self.controller_overloaded, self.link_congested = controller_overloaded, link_congested

    def submit(self, op: LocalOp) -> list[LocalOp]:
        """Returns what may be sent now: ``[op]`` on a clear path with nothing queued, else ``[]``."""
        if not self.holding and not self._queue.pending:
            return [op]
        self._append({"push": op.to_dict()})
        self._queue.push(op)
        return []

    def pending(self) -> list[LocalOp]:
        return list(self._queue.pending)

    def ready_batch(self) -> list[LocalOp]:
        """The whole queue, in order, once the bottleneck has cleared; empty while holding."""
        return [] if self.holding else self.pending()

    def confirm(self, op_ids: Iterable[str]) -> None:
        """Forget operations the controller acknowledged and compact the journal."""
        done = set(op_ids)
        self._queue.pending = [op for op in self._queue.pending if op.op_id not in done]
        self._compact()

    def _compact(self) -> None:
        snapshot = json.dumps({"snapshot": [op.to_dict() for op in self._queue.pending]}) + "\n"
        atomic_write(self.path, snapshot.encode(), fsync=self.fsync)  # two clients: two temporaries

    def _append(self, record: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, separators=(",", ":")) + "\n")
            self._sync(fh)

    def _sync(self, fh: IO[Any]) -> None:
        fh.flush()
        if self.fsync:
            os.fsync(fh.fileno())


def _replay(path: Path) -> tuple[list[LocalOp], bool]:
    """The pending list the journal describes, and whether its last line was torn."""
    if not path.exists():
        return [], False
    queue = Eliminator()
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines) - 1:
                return queue.pending, True  # torn final write
            raise
        if "snapshot" in record:
            queue = Eliminator([LocalOp.from_dict(d) for d in record["snapshot"]])
        else:
            queue.push(LocalOp.from_dict(record["push"]))
    return queue.pending, False
