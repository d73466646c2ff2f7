"""Level-by-level Merkle comparison that can run over a network (seed 000, §III-D).

Side A (`LevelExchange`) holds its own tree; side B (`Responder`, or a service
reading node items from DynamoDB) answers one question per round: "give me the
children of these paths". Round 1 asks for the root itself (the virtual parent
""), round i for the level-(i-1) children of the nodes that differed in round
i-1. Equal hashes prune whole subtrees, so the exchange ends after at most h
rounds, h the height of the taller tree (blocks of coded files are its lowest
level). Messages are plain JSON-ready dicts::

    request: ["", ...]                       paths whose children are wanted
    reply:   {path: [summary, ...], ...}     summary = NodeSummary.to_dict()

The comparison reports the topmost differing elements only: a directory present
on one side is one difference, not one per file inside it. Deletion marks travel
with their siblings, so "deleted on A" is told apart from "not yet on A", and
the last-modified times decide which side wins.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hycloud_core.merkle.entries import normalise_path, parent_of
from hycloud_core.merkle.tree import Node

VIRTUAL_ROOT = ""
MAX_PATHS = 1000  # paths one request of the exchange may ask about; a larger round is split
PREFETCH = 256  # a scoped folder with at most this many children has them asked for in round 1

Side = Literal["local", "remote"]
Action = Literal["push", "pull", "delete_remote", "delete_local"]


@dataclass(frozen=True, slots=True)
class NodeSummary:
    """What one side tells the other about a node: enough to compare, nothing below it."""

    path: str
    kind: str
    hash: bytes
    mtime: float
    children: int = 0
    index: int | None = None

    @property
    def live(self) -> bool:
        return self.kind != "tombstone"

    @classmethod
    def of(cls, node: Node) -> NodeSummary:
        return cls(node.path, node.kind, node.hash, node.mtime, len(node.children), node.index)

    def to_dict(self) -> dict[str, Any]:
        out = {"path": self.path, "kind": self.kind, "hash": self.hash.hex(), "mtime": self.mtime}
        if self.children:
            out["children"] = self.children
        if self.index is not None:
            out["index"] = self.index
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> NodeSummary:
        return cls(
            d["path"],
            d["kind"],
            bytes.fromhex(d["hash"]),
            float(d["mtime"]),
            int(d.get("children", 0)),
            d.get("index"),
        )


def _time(s: NodeSummary | None) -> float:
    return -math.inf if s is None else s.mtime


@dataclass(frozen=True, slots=True)
class Difference:
    """One inconsistent element; a side is None when it has neither the element nor a deletion mark."""

    path: str
    local: NodeSummary | None
    remote: NodeSummary | None

    @property
    def kind(self) -> str:
        """ "file", "dir" or "block": the kind of the live element (the local one on a type clash)."""
        if self.local is not None and self.local.live:
            return self.local.kind
        assert self.remote is not None
        return self.remote.kind

    @property
    def index(self) -> int | None:
        side = self.local if self.local is not None and self.local.live else self.remote
        return side.index if side is not None else None

    @property
    def winner(self) -> Side:
        """Later last-modified time wins; a deletion's time is when it happened.

        A side with no element and no mark always loses. On a tie, live content
        beats a deletion (no data is lost) and between two live versions the
        remote side, the instance, is kept.
        """
        lt, rt = _time(self.local), _time(self.remote)
        if lt != rt:
            return "local" if lt > rt else "remote"
        local_live = self.local is not None and self.local.live
        remote_live = self.remote is not None and self.remote.live
        return "local" if local_live and not remote_live else "remote"

    @property
    def action(self) -> Action:
        if self.winner == "local":
            return "push" if self.local is not None and self.local.live else "delete_remote"
        return "pull" if self.remote is not None and self.remote.live else "delete_local"


@dataclass(frozen=True)
class Diff:
    """Result of a comparison: the differences in path order and the rounds it took."""

    differences: tuple[Difference, ...]
    rounds: int

    def __iter__(self) -> Iterator[Difference]:
        return iter(self.differences)

    def __len__(self) -> int:
        return len(self.differences)

    def paths(self) -> set[str]:
        return {d.path for d in self.differences}


class Responder:
    """Side B: answers child-hash requests from its own tree."""

    def __init__(self, tree: Node) -> None:
        self._root = tree
        self._index = {node.path: node for node in tree.walk()}

    def answer(self, paths: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """Children summaries of each requested path; unknown paths answer with no children."""
        return {path: [s.to_dict() for s in self._children(path)] for path in paths}

    def _children(self, path: str) -> list[NodeSummary]:
        if path == VIRTUAL_ROOT:
            return [NodeSummary.of(self._root)]
        node = self._index.get(path)
        return [] if node is None else [NodeSummary.of(c) for c in node.children.values()]


class LevelExchange:
    """Side A: drives the rounds and collects the differences.

    Usage: ``while not ex.done: ex.receive(send(ex.request()))``, then ``ex.result()``.
    With `scope` ("/proj"), only that folder is compared: round 1 asks for its parent's
    children and keeps the folder alone (the local tree holds it at that path, e.g. built
    by ``tree_from_directory(folder, prefix="/proj")``). When the local folder holds at most
    PREFETCH children, round 1 also asks for the folder's own children, compared at once if
    the folder differs: one round trip less, for at most a few hundred summaries more.
    """

    def __init__(self, local: Node, scope: str = "/") -> None:
        self._local = Responder(local)
        self._scope = normalise_path(scope)
        self._pending: list[str] = [VIRTUAL_ROOT if self._scope == "/" else parent_of(self._scope)]
        top = local.find(self._scope) if self._scope != "/" else local
        small = top is not None and len(top.children) <= PREFETCH
        self._prefetch = self._scope if self._scope != "/" and small else None
        self._found: list[Difference] = []
        self.rounds = 0
        self.summaries_received = 0

    @property
    def done(self) -> bool:
        return not self._pending

    def request(self) -> list[str]:
        if self.rounds == 0 and self._prefetch is not None:
            return [*self._pending, self._prefetch]
        return list(self._pending)

    def receive(self, reply: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[str]:
        """Compare one round's reply with the local tree; returns the next request (empty when done)."""
        if self.done:
            raise RuntimeError("the exchange is already complete")
        self.rounds += 1
        self._pending = self._level(self._pending, reply)
        if self.rounds == 1 and self._pending == [self._prefetch] and self._prefetch in reply:
            self._pending = self._level(self._pending, reply)  # the scope's children came along
        return self._pending

    def _level(self, parents: list[str], reply: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[str]:
        """Compare the children of `parents`; the paths whose children must be compared next."""
        following: list[str] = []
        for parent in parents:
            remote = {s.path: s for s in map(NodeSummary.from_dict, reply.get(parent, ()))}
            local = {s.path: s for s in self._local._children(parent)}
            if self.rounds == 1 and self._scope != "/" and parent == parent_of(self._scope):
                remote = {p: s for p, s in remote.items() if p == self._scope}
                local = {p: s for p, s in local.items() if p == self._scope}
            self.summaries_received += len(remote)
            for path in sorted(local.keys() | remote.keys()):
                if self._compare(path, local.get(path), remote.get(path)):
                    following.append(path)
        return following

    def _compare(self, path: str, local: NodeSummary | None, remote: NodeSummary | None) -> bool:
        """Record a difference if there is one; True when the pair's children must be compared next."""
        local_live = local is not None and local.live
        remote_live = remote is not None and remote.live
        if not local_live and not remote_live:
            return False
        if local_live and remote_live:
            assert local is not None and remote is not None
            if local.kind == remote.kind and local.hash == remote.hash:
                return False
            if local.kind == remote.kind == "dir":
                return True
            self._found.append(Difference(path, local, remote))
            return local.kind == remote.kind == "file" and local.children > 0 and remote.children > 0
        self._found.append(Difference(path, local, remote))
        return False

    def result(self) -> Diff:
        if not self.done:
            raise RuntimeError("the exchange is not complete")
        return Diff(tuple(sorted(self._found, key=lambda d: d.path)), self.rounds)


def compare(local: Node, remote: Node) -> Diff:
    """Run the exchange in-process (both trees at hand)."""
    exchange, responder = LevelExchange(local), Responder(remote)
    while not exchange.done:
        exchange.receive(responder.answer(exchange.request()))
    return exchange.result()
