"""Filesystem Operation Priority scheduling (seed 000 eq. 6, §III-C).

``FOP(x) = t_A + t_T``: arrival time plus estimated transfer time, smallest first. It is a
virtual completion time, so small transfers and directory operations overtake large transfers,
yet a large transfer is overtaken only by work that arrived before its own virtual finish:
nothing starves. Directory operations move no data and get a small fixed ``t_T``, so among
themselves they are served first come, first served.

Operations on the same or related paths (a path and its ancestors, both ends of a move or
copy) keep request order with stop-and-wait: one is released only after every earlier related
operation was acknowledged.

DynamoDB layout (requests table, written by the controller, read by the dispatcher):

* Queue item: ``PK = "Q#<instance>"``, ``SK = queue_sort_key(fop, seq)`` — the FOP in whole
  microseconds zero-padded to 20 digits, then the request sequence number, so a ``Query`` with
  ``ScanIndexForward=True`` and a small ``Limit`` reads the smallest FOP first and ties fall
  back to request order. Attributes: ``operation_to_item(op)`` plus ``seq``.
* Path markers (:func:`marker_keys`), one per path an operation touches:
  ``PK = "HERE#<user>#<path>"``, and one per proper ancestor: ``PK = "BELOW#<user>#<ancestor>"``,
  each with ``SK`` = the sequence number, 12 digits. A marker lives from submission until the
  acknowledgement deletes it (one ``TransactWriteItems`` with the queue item). An operation is
  ready when a ``Limit=1`` Query on each of :func:`blocking_partitions` (``HERE#p``,
  ``BELOW#p`` and ``HERE#a`` for each ancestor a of each of its paths p) returns no sequence
  number smaller than its own; in flight is "dispatched and still marked".

:class:`FopQueue` is the same logic in memory; the controller and the simulations use it.
"""

from __future__ import annotations

import heapq
import posixpath
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

DIRECTORY_OP_SECONDS = 0.01  # the fixed small t_T of operations that move no file data


class OpKind(StrEnum):
    UPLOAD = "upload"
    DOWNLOAD = "download"
    DELETE = "delete"
    MKDIR = "mkdir"
    RMDIR = "rmdir"
    MOVE = "move"
    COPY = "copy"
    LIST = "list"


TRANSFER_KINDS = frozenset({OpKind.UPLOAD, OpKind.DOWNLOAD})


@dataclass(frozen=True)
class Operation:
    op_id: str
    kind: OpKind
    path: str
    arrival: float  # t_A, seconds
    size: int = 0
    dest: str | None = None  # MOVE and COPY

    def paths(self) -> tuple[str, ...]:
        main = normalise(self.path)
        return (main, normalise(self.dest)) if self.dest else (main,)


def normalise(path: str) -> str:
    return posixpath.normpath("/" + path.lstrip("/"))


def ancestors(path: str) -> Iterator[str]:
    """Proper ancestors of a normalised path, nearest first, ending at ``/``."""
    while path != "/":
        path = posixpath.dirname(path)
        yield path


def related(a: Operation, b: Operation) -> bool:
    """Whether two operations touch the same path or one touches an ancestor of the other's."""
    return paths_related(a.paths(), b.paths())


def paths_related(first: Iterable[str], second: Iterable[str]) -> bool:
    """Any normalised path of ``first`` equal to, above or below any path of ``second``."""
    others = list(second)
    for p in first:
        for q in others:
            if p == q or p in ancestors(q) or q in ancestors(p):
                return True
    return False


def fop_priority(
    op: Operation, seconds_per_byte: float, directory_seconds: float = DIRECTORY_OP_SECONDS
) -> float:
    """Eq. 6. ``seconds_per_byte`` is eq. 5's bracket for downloads, 1/BW_up for uploads."""
    if op.kind in TRANSFER_KINDS:
        return op.arrival + op.size * seconds_per_byte
    return op.arrival + directory_seconds


def queue_sort_key(priority: float, seq: int) -> str:
    """DynamoDB sort key: lexical order equals (FOP, request order) for FOP >= 0."""
    if priority < 0:
        raise ValueError("FOP must be non-negative")
    return f"{round(priority * 1_000_000):020d}#{seq:012d}"


def marker_keys(op: Operation, user: str, seq: int) -> set[tuple[str, str]]:
    """(PK, SK) of the path markers an operation holds while it is queued or in flight."""
    keys = set()
    for path in op.paths():
        keys.add((f"HERE#{user}#{path}", f"{seq:012d}"))
        keys |= {(f"BELOW#{user}#{parent}", f"{seq:012d}") for parent in ancestors(path)}
    return keys


def blocking_partitions(op: Operation, user: str) -> set[str]:
    """Partitions where a marker of an earlier related operation would sit."""
    parts = set()
    for path in op.paths():
        parts |= {f"HERE#{user}#{path}", f"BELOW#{user}#{path}"}
        parts |= {f"HERE#{user}#{parent}" for parent in ancestors(path)}
    return parts


def operation_to_item(op: Operation) -> dict[str, Any]:
    """Plain dict with no floats (arrival in microseconds), ready for DynamoDB."""
    item: dict[str, Any] = {
        "op_id": op.op_id,
        "kind": op.kind.value,
        "path": op.path,
        "arrival_us": round(op.arrival * 1_000_000),
        "size": op.size,
    }
    if op.dest is not None:
        item["dest"] = op.dest
    return item


def operation_from_item(item: Mapping[str, Any]) -> Operation:
    return Operation(
        op_id=str(item["op_id"]),
        kind=OpKind(item["kind"]),
        path=str(item["path"]),
        arrival=int(item["arrival_us"]) / 1_000_000,
        size=int(item.get("size", 0)),
        dest=str(item["dest"]) if item.get("dest") is not None else None,
    )


class FopQueue:
    """Smallest-FOP-first queue with stop-and-wait between related operations."""

    def __init__(self, directory_seconds: float = DIRECTORY_OP_SECONDS) -> None:
        self.directory_seconds = directory_seconds
        self._seq = 0
        self._ops: dict[str, tuple[Operation, float, int]] = {}  # live: queued or in flight
        self._ready: list[tuple[float, int, str]] = []
        self._blockers: dict[str, int] = {}  # queued op -> unacknowledged earlier related ops
        self._dependents: dict[str, list[str]] = {}
        self._in_flight: set[str] = set()
        self._here: dict[str, set[str]] = {}  # path -> live ops touching exactly it
        self._below: dict[str, set[str]] = {}  # path -> live ops touching something under it

    def __len__(self) -> int:
        return len(self._ops)

    def submit(self, op: Operation, seconds_per_byte: float = 0.0) -> float:
        """Enqueue in request order; returns the operation's FOP."""
        if op.op_id in self._ops:
            raise ValueError(f"duplicate operation id {op.op_id}")
        priority = fop_priority(op, seconds_per_byte, self.directory_seconds)
        earlier = self._related_live(op)
        self._ops[op.op_id] = (op, priority, self._seq)
        self._seq += 1
        for other in earlier:
            self._dependents.setdefault(other, []).append(op.op_id)
        self._blockers[op.op_id] = len(earlier)
        if not earlier:
            heapq.heappush(self._ready, (priority, self._ops[op.op_id][2], op.op_id))
        self._index(op, add=True)
        return priority

    def next_ready(self) -> Operation | None:
        """The releasable operation with the smallest FOP, now in flight; None if none is."""
        if not self._ready:
            return None
        _, _, op_id = heapq.heappop(self._ready)
        del self._blockers[op_id]
        self._in_flight.add(op_id)
        return self._ops[op_id][0]

    def peek_ready(self) -> Operation | None:
        return self._ops[self._ready[0][2]][0] if self._ready else None

    def ack(self, op_id: str) -> None:
        """Acknowledge a finished operation and release the ones that waited on it."""
        if op_id not in self._in_flight:
            raise KeyError(f"{op_id} is not in flight")
        self._in_flight.remove(op_id)
        op, _, _ = self._ops.pop(op_id)
        self._index(op, add=False)
        for waiting in self._dependents.pop(op_id, ()):
            self._blockers[waiting] -= 1
            if self._blockers[waiting] == 0:
                _, priority, seq = self._ops[waiting]
                heapq.heappush(self._ready, (priority, seq, waiting))

    def in_flight(self) -> frozenset[str]:
        return frozenset(self._in_flight)

    def _related_live(self, op: Operation) -> set[str]:
        found: set[str] = set()
        for path in op.paths():
            found |= self._here.get(path, set()) | self._below.get(path, set())
            for parent in ancestors(path):
                found |= self._here.get(parent, set())
        return found

    def _index(self, op: Operation, add: bool) -> None:
        for path in op.paths():
            _update(self._here, path, op.op_id, add)
            for parent in ancestors(path):
                _update(self._below, parent, op.op_id, add)


def _update(index: dict[str, set[str]], key: str, op_id: str, add: bool) -> None:
    if add:
        index.setdefault(key, set()).add(op_id)
        return
    members = index.get(key)
    if members is None:
        return  # a move within one directory lists the same ancestor twice
    members.discard(op_id)
    if not members:
        del index[key]
