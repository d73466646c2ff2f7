"""The one-round Merkle exchange: the client sends a sketch of its tree, the cloud answers with
what differs (messages: wire.py; route: `POST /v1/merkle/diff`).

The level-by-level exchange (exchange.py) spends a round trip per level and sends every child of
every folder that differs. Here the client sends, in one request, each local folder's full hash
and a few bytes of each file's hash with its name; the cloud walks its own tree, descending only into folders
whose hashes differ, and answers with the files whose prefixes match no local file, the folders
the client has no record of, and, per folder, which local files matched nothing. One round trip
whatever the depth, and bytes in proportion to the folders and what changed.

A prefix can match by chance (a changed file whose new hash shares its first bytes with some
cloud sibling). The client checks every folder that differs: the cloud's folder hash must equal
the hash rebuilt (hashing.py, eq. 9) from the matched local files and the cloud's entries. A
folder that fails is asked for again without a sketch (every child, full hashes): a second
round, with a chance under 1 in 1,024 per changed folder.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from hycloud_core.merkle import wire
from hycloud_core.merkle.entries import normalise_path
from hycloud_core.merkle.exchange import Diff, Difference, NodeSummary
from hycloud_core.merkle.hashing import dir_hash, md5, name_of
from hycloud_core.merkle.tree import Node


def named(path: str, digest: bytes) -> bytes:
    """What a file's sketch entry is a prefix of: its hash with its name (a file's hash alone names
    only its content, and two files of one folder may hold the same)."""
    return md5(name_of(path).encode(), b"\0", digest)


def full_path(scope: str, rel: str) -> str:
    if not rel:
        return scope
    return "/" + rel if scope == "/" else f"{scope}/{rel}"


def _parent_rel(rel: str) -> str | None:
    return None if not rel else rel.rsplit("/", 1)[0] if "/" in rel else ""


# --- the client's side ----------------------------------------------------------------------------
class LocalFolders(Protocol):
    """The client's folders as the exchange reads them: every folder's hash and files' sketch
    entries up front, a folder's node (its children) only for the few that differ."""

    def folders(self, scope: str) -> list[tuple[str, bytes, list[bytes]]]:
        """(path, hash, each file's `named` in name order) of every folder at and below `scope`,
        in path order; [] when `scope` is no folder."""
        ...

    def node(self, path: str) -> Node:
        """The folder's node with its children (theirs: enough to summarise, none below)."""
        ...


class NodeFolders:
    """LocalFolders over a whole tree."""

    def __init__(self, tree: Node) -> None:
        self.tree = tree
        self._index: dict[str, Node] = {}

    def folders(self, scope: str) -> list[tuple[str, bytes, list[bytes]]]:
        top = self.tree.find(scope)
        if top is None or top.kind != "dir":
            return []
        found = _folders(top)
        self._index = {n.path: n for n in found}
        return [
            (n.path, n.hash, [named(p, c.hash) for p, c in n.children.items() if c.kind == "file"])
            for n in found
        ]

    def node(self, path: str) -> Node:
        return self._index[path]


class SketchExchange:
    """Drives the exchange: ``while not ex.done: ex.receive(send(ex.request()))``, then ``result()``.

    `local` holds the scope's folder at `scope` (a tree, e.g. build_tree of remote paths, or its
    LocalFolders). Round 1 sends every folder with a sketch; later rounds (rare) settle prefix
    collisions.
    """

    def __init__(self, local: Node | LocalFolders, scope: str = "/") -> None:
        self.scope = normalise_path(scope)
        self._local = NodeFolders(local) if isinstance(local, Node) else local
        folders = self._local.folders(self.scope)
        if not folders:
            raise ValueError(f"the local tree holds no folder {self.scope}")
        self._records = tuple(self._sketched(path, digest, files) for path, digest, files in folders)
        self._found: list[Difference] = []
        self.rounds = 0
        self.settled: list[str] = []  # folders asked for again after a prefix collision
        self.below: dict[str, list[NodeSummary]] = {}  # folders only the cloud has: all below them
        self.done = False

    def _rel(self, path: str) -> str:
        return "" if path == self.scope else path[len(self.scope) :].lstrip("/")

    def _sketched(self, path: str, digest: bytes, files: list[bytes]) -> wire.Record:
        p = wire.prefix_length(len(files))
        return wire.Record(self._rel(path), digest, p, tuple(f[:p] for f in files))

    def request(self) -> bytes:
        return wire.encode_request(wire.Request(self.scope, self._records))

    def receive(self, reply: bytes) -> None:
        """Compare one reply with the local tree; sets `done`, or the records of the next round."""
        answers, below = wire.decode_reply_below(reply, self._records)
        self.rounds += 1
        for tree in below:
            if tree.complete:
                at = full_path(self.scope, tree.path)
                self.below[at] = [
                    NodeSummary(f"{at}/{e.name}", e.kind, e.hash, e.mtime) for e in tree.entries
                ]
        status = {self._records[i].path: a for i, a in answers.items()}
        retry: list[Node] = []
        top = self._records[0].path if self._records else None
        if self.rounds == 1 and top in status and status[top].status != wire.DIFFERS:
            self._found.append(self._whole(self._node(top), status[top]))
        for i, answer in sorted(answers.items()):
            if answer.status != wire.DIFFERS:
                continue
            node = self._node(self._records[i].path)
            if not self._folder(node, self._records[i], answer, status):
                retry.append(node)
        # asked again without a sketch: every child with its full hash
        self._records = tuple(wire.Record(self._rel(n.path), n.hash) for n in retry)
        self.settled += [n.path for n in retry]
        self.done = not retry

    def _node(self, rel: str) -> Node:
        return self._local.node(full_path(self.scope, rel))

    def _whole(self, node: Node, answer: wire.Answer) -> Difference:
        remote = (
            None
            if answer.status == wire.ABSENT
            else NodeSummary(node.path, "file", answer.hash, answer.mtime)
        )
        return Difference(node.path, NodeSummary.of(node), remote)

    def _folder(
        self, node: Node, record: wire.Record, answer: wire.Answer, status: Mapping[str, wire.Answer]
    ) -> bool:
        """Record the differences among one folder's children; False if the cloud's folder hash
        does not check out (a prefix matched by chance): the folder is then asked for again."""
        remote = self._remote_children(node, record, answer, status)
        live = [(name_of(p), s.hash) for p, s in remote.items() if s.kind in ("file", "dir")]
        if record.prefix and dir_hash(live) != answer.hash:
            return False
        for path in sorted(node.children.keys() | remote.keys()):
            local, theirs = node.children.get(path), remote.get(path)
            mine = NodeSummary.of(local) if local is not None and local.live else None
            if mine is None and theirs is None:
                continue  # a local deletion mark: nothing live on either side
            if mine is not None and theirs is not None:
                if mine.kind == theirs.kind == "dir" or (
                    mine.kind == theirs.kind and mine.hash == theirs.hash
                ):
                    continue  # a folder on both sides has its own record
            self._found.append(Difference(path, mine, theirs))
        return True

    def _remote_children(
        self, node: Node, record: wire.Record, answer: wire.Answer, status: Mapping[str, wire.Answer]
    ) -> dict[str, NodeSummary]:
        """The cloud's live children of `node`, as the answer and the matched sketch tell them."""
        out: dict[str, NodeSummary] = {}
        files = [c for c in node.children.values() if c.kind == "file"]
        for i, child in enumerate(files if record.prefix else ()):
            if i not in answer.unmatched:
                out[child.path] = NodeSummary.of(child)
        for child in node.children.values():
            if child.kind != "dir" or not record.prefix:
                continue
            theirs = status.get(self._rel(child.path))
            if theirs is None:
                out[child.path] = NodeSummary.of(child)  # equal
            elif theirs.status == wire.DIFFERS:
                out[child.path] = NodeSummary(child.path, "dir", theirs.hash, child.mtime)
            elif theirs.status == wire.NOT_DIR:
                out[child.path] = NodeSummary(child.path, "file", theirs.hash, theirs.mtime)
        for e in answer.entries:
            path = node.path.rstrip("/") + "/" + e.name
            out[path] = NodeSummary(path, e.kind, e.hash, e.mtime)
        return out

    def result(self) -> Diff:
        if not self.done:
            raise RuntimeError("the exchange is not complete")
        unique = {d.path: d for d in self._found}
        return Diff(tuple(unique[p] for p in sorted(unique)), self.rounds)


def _folders(top: Node) -> list[Node]:
    """The folders at and below `top`, in path order (files are not visited: most of a tree)."""
    out, stack = [], [top]
    while stack:
        node = stack.pop()
        out.append(node)
        stack += [c for c in node.children.values() if c.kind == "dir"]
    return sorted(out, key=lambda n: n.path)


def compare(local: Node, scope: str, send: Callable[[bytes], bytes]) -> SketchExchange:
    """Run the exchange with `send` carrying each request to the other side."""
    exchange = SketchExchange(local, scope)
    while not exchange.done:
        exchange.receive(send(exchange.request()))
    return exchange


# --- the cloud's side -----------------------------------------------------------------------------
class OutOfTime(Exception):
    """The exchange's work budget ran out before every folder that differs was read."""


class TreeReader(Protocol):
    """What the cloud reads its tree through (merkle_records.py, or a Node in tests)."""

    def nodes(self, paths: Sequence[str]) -> dict[str, NodeSummary | None]: ...

    def children(self, paths: Sequence[str]) -> dict[str, list[NodeSummary]]: ...


class NodeReader:
    """A TreeReader over an in-memory tree; counts its reads as the records would be read."""

    def __init__(self, tree: Node) -> None:
        self._index = {n.path: n for n in tree.walk()}
        self.reads: list[str] = []

    def nodes(self, paths: Sequence[str]) -> dict[str, NodeSummary | None]:
        self.reads += paths
        return {p: NodeSummary.of(self._index[p]) if p in self._index else None for p in paths}

    def children(self, paths: Sequence[str]) -> dict[str, list[NodeSummary]]:
        self.reads += [p + "/*" for p in paths]
        return {p: [NodeSummary.of(c) for c in self._index[p].children.values()] for p in paths}


def answer(data: bytes, reader: TreeReader, subtrees: int | None = None) -> bytes:
    """The cloud's reply to a request: records that are not equal, found level by level, each
    level's folders read side by side, nothing below a folder whose hash is equal read at all.
    With `subtrees`, the reply also holds the subtrees of folders only the cloud has, up to that
    many entries in all (wire.BELOW)."""
    request = wire.decode_request(data)
    scope = normalise_path(request.scope)
    index = {r.path: i for i, r in enumerate(request.records)}
    below: dict[str, list[str]] = defaultdict(list)
    for rel in index:
        up = _parent_rel(rel)
        if up is not None and up in index:
            below[up].append(rel)
    tops = [rel for rel in index if _parent_rel(rel) not in index]
    found = reader.nodes([full_path(scope, rel) for rel in tops])
    answers: dict[int, wire.Answer] = {}
    level = [rel for rel in tops if _judge(request, index[rel], found[full_path(scope, rel)], answers)]
    while level:
        kids = reader.children([full_path(scope, rel) for rel in level])
        following: list[str] = []
        for rel in level:
            live = {s.path: s for s in kids.get(full_path(scope, rel), []) if s.live}
            _differs(request, index, rel, below[rel], live, answers[index[rel]], scope)
            for sub in below[rel]:
                if _judge(request, index[sub], live.get(full_path(scope, sub)), answers):
                    following.append(sub)
        level = following
    if subtrees is None:
        return wire.encode_reply(answers, request.records)
    only_cloud = [
        f"{request.records[i].path}/{e.name}".lstrip("/")
        for i, a in sorted(answers.items())
        for e in a.entries
        if e.kind == "dir"
    ]
    return wire.encode_reply(answers, request.records, _subtrees(reader, scope, only_cloud, subtrees))


def _subtrees(reader: TreeReader, scope: str, tops: list[str], limit: int) -> list[wire.Subtree]:
    """Every live node below each of `tops` (paths relative to the scope), a level of all of them
    at a time; the subtrees not finished within `limit` entries (or the request's time) are
    marked incomplete, for the client to list as before."""
    trees = {top: wire.Subtree(top, True) for top in tops}
    level, count = [(top, top) for top in tops], 0
    while level:
        if count > limit:
            break
        try:
            kids = reader.children([full_path(scope, rel) for _, rel in level])
        except OutOfTime:
            break
        following = []
        for top, rel in level:
            for s in kids.get(full_path(scope, rel), []):
                if not s.live or s.kind not in ("file", "dir"):
                    continue
                below = f"{rel}/{name_of(s.path)}"
                trees[top].entries.append(wire.Entry(below[len(top) + 1 :], s.kind, s.hash, s.mtime))
                count += 1
                if s.kind == "dir":
                    following.append((top, below))
        level = following
    for top, _ in level:
        trees[top].complete, trees[top].entries = False, []
    return list(trees.values())


def _judge(request: wire.Request, i: int, node: NodeSummary | None, answers: dict[int, wire.Answer]) -> bool:
    """The cloud's node for record `i`; True when it is a folder whose hash differs."""
    if node is None or not node.live or node.kind not in ("dir", "file"):
        answers[i] = wire.Answer(wire.ABSENT)
        return False
    if node.kind == "file":
        answers[i] = wire.Answer(wire.NOT_DIR, node.hash, node.mtime)
        return False
    if node.hash == request.records[i].hash:
        return False
    answers[i] = wire.Answer(wire.DIFFERS, node.hash, node.mtime)
    return True


def _differs(
    request: wire.Request,
    index: Mapping[str, int],
    rel: str,
    subs: list[str],
    live: Mapping[str, NodeSummary],
    answer: wire.Answer,
    scope: str,
) -> None:
    """Fill a differing folder's answer: unmatched sketch entries and the children not accounted for."""
    record = request.records[index[rel]]
    p, mine = record.prefix, set(record.files)
    recorded = {full_path(scope, s) for s in subs}
    prefixes = {path: named(path, s.hash)[:p] for path, s in live.items() if s.kind == "file"} if p else {}
    theirs = set(prefixes.values())
    answer.unmatched = frozenset(i for i, f in enumerate(record.files) if f not in theirs)
    for path, s in sorted(live.items()):
        if s.kind == "file" and (not p or prefixes[path] not in mine):
            answer.entries.append(wire.Entry(path.rsplit("/", 1)[1], "file", s.hash, s.mtime))
        elif s.kind == "dir" and path not in recorded:
            answer.entries.append(wire.Entry(path.rsplit("/", 1)[1], "dir", s.hash, s.mtime))


__all__ = [
    "LocalFolders",
    "NodeFolders",
    "NodeReader",
    "OutOfTime",
    "SketchExchange",
    "TreeReader",
    "answer",
    "compare",
    "full_path",
]
