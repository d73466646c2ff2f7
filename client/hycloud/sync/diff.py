"""Which paths differ between the local tree and the cloud, found by the one-round Merkle
exchange (`merkle.sketch`, `POST /v1/merkle/diff`), or by the level-by-level one
(`merkle.LevelExchange`, `POST /v1/merkle/children`) with a cloud that predates it.

Equal subtrees have equal hashes and are never descended into. The one-round exchange sends every
local folder's hash and a few bytes of each file's hash (local_folders.py, from the scan); the
cloud answers with what differs, in one round trip whatever the depth, and with the whole subtree
of each folder only it has. The level-by-level exchange needs the whole local tree (built here)
and lists the cloud's side of a folder only it has through `POST /v1/merkle/children`.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hycloud_core.errors import HyCloudError
from hycloud_core.merkle import LevelExchange, NodeSummary, sketch
from hycloud_core.merkle.entries import parent_of
from hycloud_core.merkle.exchange import Diff
from hycloud_core.merkle.hashing import dir_hash, file_hash, name_of
from hycloud_core.merkle.tree import Node

from .filters import PathFilter
from .local_folders import ScannedFolders, full_path, leaf, merkle, rel_path
from .scan import LocalFile, LocalTree

Ask = Callable[[list[str]], Mapping[str, Sequence[Mapping[str, Any]]]]
Send = Callable[[bytes], bytes]  # one request of the one-round exchange, its answer
MAX_SKETCH = 4 * 1024 * 1024  # a larger request (millions of files) takes the level-by-level exchange


@dataclass(frozen=True)
class RemoteFile:
    merkle: str  # hex of the cloud's Merkle hash of the file (content hash + full path)
    mtime: float


@dataclass
class Differences:
    """Files that differ (with the cloud's side where it has one) and folders only one side has."""

    files: set[str] = field(default_factory=set)
    remote: dict[str, RemoteFile] = field(default_factory=dict)
    local_dirs: set[str] = field(default_factory=set)
    remote_dirs: set[str] = field(default_factory=set)
    clashes: set[str] = field(default_factory=set)  # a file on one side, a folder on the other
    # the nodes below each folder only the cloud has, sent with the diff
    below: dict[str, list[NodeSummary]] = field(default_factory=dict)
    rounds: int = 0
    requests: int = 0
    exchange_seconds: float = 0.0  # building the local tree, the requests and comparing their answers


def merkle_of(content_hash: str) -> str:
    """The cloud's Merkle hash of a file with `content_hash`, wherever it is."""
    return file_hash(bytes.fromhex(content_hash)).hex()


def local_merkle_tree(root: str, local: LocalTree) -> Node:
    """The tree `build_tree` makes of the scan at the remote paths (same nodes, same hashes), built
    straight from the scan's folders: one pass, no path normalised, for a large tree's sake."""
    files: dict[str, list[tuple[str, LocalFile]]] = defaultdict(list)
    dirs: dict[str, list[str]] = defaultdict(list)
    for rel, f in local.files.items():
        files[rel.rpartition("/")[0]].append((rel, f))
    for rel in local.dirs:
        dirs[rel.rpartition("/")[0]].append(rel)

    def folder(rel: str) -> Node:
        kids = [leaf(p, merkle(f), f.mtime) for p, f in _at(root, files[rel])]
        return _dir(full_path(root, rel), kids, [folder(d) for d in dirs[rel]])

    top = folder("")
    while top.path != "/":
        top = _dir(parent_of(top.path), [], [top])
    return top


def _at(root: str, files: list[tuple[str, LocalFile]]) -> list[tuple[str, LocalFile]]:
    return [(full_path(root, rel), f) for rel, f in files]


def _dir(path: str, files: list[Node], dirs: list[Node]) -> Node:
    """A folder node as build_tree makes it: children in path order."""
    children = {n.path: n for n in sorted([*files, *dirs], key=lambda n: n.path)}
    mtime = max((n.mtime for n in children.values()), default=0.0)
    digest = dir_hash((name_of(p), n.hash) for p, n in children.items())
    return Node(path, "dir", digest, max(mtime, 0.0), children)


def find(ask: Ask, root: str, local: LocalTree, keep: PathFilter, send: Send | None = None) -> Differences:
    """Run the exchange (one round with `send`, else level by level through `ask`), then list the
    cloud's side of folders only the cloud has."""
    started, out = time.perf_counter(), Differences()
    found = _one_round(send, ScannedFolders(root, local), root, out) if send is not None else None
    if found is None:
        found = _levels(ask, local_merkle_tree(root, local), root, out)
    _sort(found, root, local, keep, ask, out)
    out.exchange_seconds = time.perf_counter() - started
    return out


def _one_round(send: Send, folders: ScannedFolders, root: str, out: Differences) -> Diff | None:
    """The one-round exchange's differences; None when the request is too large or the cloud
    predates the route (404), for the level-by-level exchange to find them instead."""
    exchange = sketch.SketchExchange(folders, root)
    while not exchange.done:
        body = exchange.request()
        if len(body) > MAX_SKETCH:
            return None
        try:
            reply = send(body)
        except HyCloudError as err:
            if err.status in (404, 405) and exchange.rounds == 0:
                return None
            raise
        out.requests += 1
        exchange.receive(reply)
    out.rounds = exchange.rounds
    out.below = exchange.below
    return exchange.result()


def _levels(ask: Ask, tree: Node, root: str, out: Differences) -> Diff:
    exchange = LevelExchange(tree, scope=root)
    while not exchange.done:
        exchange.receive(ask(exchange.request()))
        out.requests += 1
    out.rounds += exchange.rounds
    return exchange.result()


def _sort(found: Diff, root: str, local: LocalTree, keep: PathFilter, ask: Ask, out: Differences) -> None:
    """Each difference into files, folders one side has and clashes; the cloud's own folders listed."""
    expand: list[str] = []
    for d in found:
        rel = rel_path(root, d.path)
        lk = d.local.kind if d.local is not None and d.local.live else None
        rk = d.remote.kind if d.remote is not None and d.remote.live else None
        if "/#" in d.path or (rel and not _kept(keep, rel, lk or rk)):
            continue
        if lk and rk and lk != rk:
            out.clashes.add(rel)
        elif lk == "dir":
            _add_local_dir(out, local, rel)
        elif rk == "dir":
            out.remote_dirs.add(rel)
            if d.path in out.below:
                _add_remote(root, out.below[d.path], keep, out)
            else:
                expand.append(d.path)
        else:
            out.files.add(rel)
            if rk == "file":
                out.remote[rel] = _remote(d.remote)
    _expand_remote(ask, root, expand, keep, out)


def _kept(keep: PathFilter, rel: str, kind: str | None) -> bool:
    return keep.keeps_dir(rel) if kind == "dir" else keep.keeps_file(rel)


def _remote(summary: NodeSummary | None) -> RemoteFile:
    assert summary is not None
    return RemoteFile(summary.hash.hex(), summary.mtime)


def _add_local_dir(out: Differences, local: LocalTree, rel: str) -> None:
    """A folder only the local side has: it and everything below it differ."""
    prefix = rel + "/" if rel else ""
    out.local_dirs.add(rel)  # "" is the synced root itself, missing in the cloud
    out.local_dirs.update(d for d in local.dirs if d.startswith(prefix))
    out.files.update(f for f in local.files if f.startswith(prefix))


def _expand_remote(ask: Ask, root: str, folders: list[str], keep: PathFilter, out: Differences) -> None:
    """Everything below folders only the cloud has, one request per level."""
    while folders:
        reply = ask(folders)
        out.requests += 1
        following: list[str] = []
        for folder in folders:
            summaries = [NodeSummary.from_dict(s) for s in reply.get(folder, ())]
            following += _add_remote(root, summaries, keep, out)
        folders = following


def _add_remote(root: str, summaries: list[NodeSummary], keep: PathFilter, out: Differences) -> list[str]:
    """The cloud's nodes below a folder only it has, as differences; the folders among them kept."""
    folders = []
    for summary in summaries:
        rel = rel_path(root, summary.path)
        if summary.kind == "dir" and keep.keeps_dir(rel):
            out.remote_dirs.add(rel)
            folders.append(summary.path)
        elif summary.kind == "file" and keep.keeps_file(rel):
            out.files.add(rel)
            out.remote[rel] = _remote(summary)
    return folders


__all__ = ["Differences", "RemoteFile", "find", "full_path", "merkle_of", "rel_path"]
