"""How the cloud reads its tree for the one-round exchange (merkle/sketch.py's TreeReader).

A folder whose hash is recomputed gets its live children's listing (names, kinds, hashes,
mtimes and the folders' ids) written beside it (`listing_sk`, wire.encode_listing), named by the
hash they make. So a differing folder's children come from its listing, and the listings of one
level's differing folders come together, by BatchGetItem (100 keys a request, the requests side
by side), keyed by the folder ids the level above listed: one request per level where a Query
per folder was needed. A listing is used only if it names the hash the folder has (a subtree's
hash names its content, so any listing of that hash describes it). A folder without one (stale,
changed since, or over wire.MAX_LISTING children) is read as before, its children by Query and
stale hashes recomputed, and is given its listing. Nothing below an equal folder is read.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import batched
from typing import Any

from ..merkle import wire
from ..merkle.entries import parent_of
from ..merkle.exchange import NodeSummary
from ..merkle.hashing import dir_hash
from ..merkle.sketch import OutOfTime
from ..paths import name as name_of
from .dir_index import ROOT as ROOT_ID
from .merkle_records import (
    ANSWER_BUDGET_S,
    ROOT,
    MerkleRecords,
    _expired,
    _join,
    _parallel,
    _Reads,
    child_sk,
    listing_of,
    listing_sk,
)
from .pages import BATCH_GET, batch_get


@dataclass(frozen=True)
class Folder:
    """A folder the exchange has met: its id and the hash it had."""

    id: str
    hash: bytes


class SketchReads:
    """The exchange's reads within one request, with what they cost (the route's headers)."""

    @classmethod
    def within(cls, tree: MerkleRecords, budget_s: float = ANSWER_BUDGET_S) -> SketchReads:
        """The reads of one exchange request, with `budget_s` of work."""
        return cls(tree, time.monotonic() + budget_s)

    def __init__(self, tree: MerkleRecords, deadline: float) -> None:
        self.tree, self.deadline = tree, deadline
        self.resolver = tree.resolver()  # the folders compared share their parents: each read once
        self.folders: dict[str, Folder] = {}  # by path
        self.queries = 0  # folders read: by GetItem, from a batch or by Query
        self.requests = 0  # DynamoDB requests made for them (a stale hash's recompute aside)
        self.rounds = 0  # reads made one after another (each round's side by side)

    def nodes(self, paths: Sequence[str]) -> dict[str, NodeSummary | None]:
        items = _parallel(self._node, paths)
        self.queries, self.rounds = self.queries + len(paths), self.rounds + 1
        self.requests += len(paths)
        return dict(zip(paths, items, strict=True))

    def _node(self, path: str) -> NodeSummary | None:
        item = self.tree.root_item() if path == ROOT else self.tree.get(path, self.resolver)
        if item is None or _expired(item, time.time()):
            return None
        if item["kind"] != "tombstone":
            item = self.tree._fresh(item)
            if not item.get("hash"):
                raise OutOfTime(f"{path}: its hash is being recomputed")
            self._met(path, item)
        return self.tree._summary(item)

    def _met(self, path: str, item: dict[str, Any]) -> None:
        if item["kind"] == "dir" and item.get("hash"):
            self.folders[path] = Folder(str(item.get("id") or ROOT_ID), bytes.fromhex(item["hash"]))

    def children(self, paths: Sequence[str]) -> dict[str, list[NodeSummary]]:
        """The live children of folders that differ: from their listings, else by Query."""
        self._fetch([p for p in paths if p not in self.folders])
        listed = self._listings([p for p in paths if p in self.folders])
        out: dict[str, list[NodeSummary]] = {}
        for path, entries in listed.items():
            out[path] = [NodeSummary(_join(path, e.name), e.kind, e.hash, e.mtime) for e, _ in entries]
            for e, folder_id in entries:
                if e.kind == "dir" and folder_id:
                    self.folders[_join(path, e.name)] = Folder(folder_id, e.hash)
        rest = [p for p in paths if p not in out]
        if rest:
            out |= self._query(rest)
        self.rounds += 1
        return out

    def _listings(self, paths: Sequence[str]) -> dict[str, list[tuple[wire.Entry, str]]]:
        """The listings, by BatchGetItem, that name the hashes the folders have."""
        keys = {listing_sk(self.folders[p].id): p for p in paths}
        pages = _parallel(self._batch, list(batched(sorted(keys), BATCH_GET)))
        self.queries, self.requests = self.queries + len(keys), self.requests + len(pages)
        out = {}
        for item in (i for page in pages for i in page):
            path = keys[item["sk"]]
            entries = wire.decode_listing(bytes(item["listing"]), self.folders[path].hash)
            if entries is not None:
                out[path] = entries
        return out

    def _query(self, paths: Sequence[str]) -> dict[str, list[NodeSummary]]:
        """Children by Query (stale hashes recomputed, as `MerkleRecords.answer` does), each folder
        whose hash checks out given the listing it lacked."""
        tree = self.tree
        reads = _Reads(tree, {p: self.folders[p].id for p in paths if p in self.folders})
        kids = reads.children_at(list(paths))
        tree._freshen([k for items in kids.values() for k in items], self.deadline, reads)
        if time.monotonic() > self.deadline or any(
            not k.get("hash") for v in kids.values() for k in v if _live(k)
        ):
            raise OutOfTime(f"{len(paths)} folders not read in time")
        self.queries, self.requests = self.queries + len(paths), self.requests + len(paths)
        backfill = []
        for path, items in kids.items():
            for k in items:
                if _live(k):
                    self._met(k["path"], k)
            folder = self.folders.get(path)
            live = [k for k in items if _live(k)]
            if (
                folder is not None
                and dir_hash((str(k["name"]), bytes.fromhex(k["hash"])) for k in live) == folder.hash
            ):
                backfill.append({"id": folder.id, "listing": listing_of(folder.hash, live)})
        tree.put_listings([b for b in backfill if b["listing"] is not None])
        return {p: [tree._summary(k) for k in items if _live(k)] for p, items in kids.items()}

    def _fetch(self, paths: Sequence[str]) -> None:
        """Folders a listing named without an id (a node written without one): their items, by
        their parents' ids and their names."""
        keys = {}
        for path in paths:
            parent = self.folders.get(parent_of(path))
            if parent is not None:
                keys[child_sk(parent.id, name_of(path))] = path
        pages = _parallel(self._batch, list(batched(sorted(keys), BATCH_GET)))
        self.queries, self.requests = self.queries + len(keys), self.requests + len(pages)
        for item in (i for page in pages for i in page):
            self._met(keys[item["sk"]], item)

    def _batch(self, sks: Sequence[str]) -> list[dict[str, Any]]:
        return batch_get(self.tree.table, [{"pk": self.tree.pk, "sk": sk} for sk in sks], consistent=True)


def _live(item: dict[str, Any]) -> bool:
    return item["kind"] in ("file", "dir")
