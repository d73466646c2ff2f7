"""Which paths differ between the local tree and the cloud, found by the level-by-level Merkle
exchange (`merkle.LevelExchange`) with the cloud's `POST /v1/merkle/children` as the other side.

The local tree is built at the remote paths (a file's hash covers its full path), so equal
subtrees have equal hashes and are never descended into: an unchanged tree costs one round,
and any difference at most h rounds, h the height of the synced subtree. A folder only one side
has is one difference; the cloud's side of such a folder is then listed through the same route.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hycloud_core.merkle import DirEntry, FileEntry, LevelExchange, NodeSummary, build_tree
from hycloud_core.merkle.hashing import file_hash
from hycloud_core.merkle.tree import Node

from .filters import PathFilter
from .scan import LocalTree

Ask = Callable[[list[str]], Mapping[str, Sequence[Mapping[str, Any]]]]


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
    rounds: int = 0
    requests: int = 0


def full_path(root: str, rel: str) -> str:
    return root if not rel else ("/" + rel if root == "/" else f"{root}/{rel}")


def rel_path(root: str, path: str) -> str:
    return path[len(root) :].lstrip("/") if root != "/" else path.lstrip("/")


def merkle_of(root: str, rel: str, content_hash: str) -> str:
    """The cloud's Merkle hash of a file with `content_hash` at `rel` under `root`."""
    return file_hash(full_path(root, rel), bytes.fromhex(content_hash)).hex()


def local_merkle_tree(root: str, local: LocalTree) -> Node:
    entries: dict[str, FileEntry | DirEntry] = {root: DirEntry()}
    for rel in local.dirs:
        entries[full_path(root, rel)] = DirEntry()
    for rel, f in local.files.items():
        entries[full_path(root, rel)] = FileEntry(bytes.fromhex(f.content_hash), f.mtime)
    return build_tree(entries)


def find(ask: Ask, root: str, local: LocalTree, keep: PathFilter) -> Differences:
    """Run the exchange, then list the cloud's side of folders only the cloud has."""
    exchange = LevelExchange(local_merkle_tree(root, local), scope=root)
    out = Differences()
    while not exchange.done:
        exchange.receive(ask(exchange.request()))
        out.requests += 1
    out.rounds = exchange.rounds
    expand: list[str] = []
    for d in exchange.result():
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
            expand.append(d.path)
        else:
            out.files.add(rel)
            if rk == "file":
                out.remote[rel] = _remote(d.remote)
    _expand_remote(ask, root, expand, keep, out)
    return out


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
            for summary in map(NodeSummary.from_dict, reply.get(folder, ())):
                rel = rel_path(root, summary.path)
                if summary.kind == "dir" and keep.keeps_dir(rel):
                    out.remote_dirs.add(rel)
                    following.append(summary.path)
                elif summary.kind == "file" and keep.keeps_file(rel):
                    out.files.add(rel)
                    out.remote[rel] = _remote(summary)
        folders = following


__all__ = ["Differences", "RemoteFile", "find", "full_path", "merkle_of", "rel_path"]
