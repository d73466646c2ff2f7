"""A user's Merkle tree (merkle/hashing.py) kept in DynamoDB, one item per node, for the exchange route.

Key (one partition per user, records.py's table)::

    pk = "MK#<user>"
    sk = "/"                   the root
         "<parent>//<name>"    any other node: "///docs", "/docs//a.txt", "/docs/x//y"

so the direct children of p are exactly `begins_with(sk, p + "//")` ("///" for the root) and
everything below p (p not the root) is `begins_with(sk, p + "/")`: one Query either way.

Attributes: `path`; `kind` (file, dir or tombstone); `mtime` (a tombstone's: when the deletion
happened); `hash` (hex; absent on a directory whose hash is stale); a file's `digest` (its
content hash, content.py), from which its hash is recomputed when a move or copy changes its
path; a directory's `gen`; a tombstone's `expiration` (TTL, TOMBSTONE_TTL_S).

Invalidation, not eager recompute: a mutation writes the node it changes, then, deepest first,
gives every ancestor a new random `gen` and removes its `hash`. The route recomputes a missing
hash bottom-up from the children's items and stores it only if `gen` is still the one it read
before reading the children, so a mutation racing with it (which writes its node before it
touches the ancestors) always leaves the hash missing, never stale. Random generations rule
out ABA (a folder removed and made again). Recomputing eagerly would read every sibling at
every level on every write; invalidating costs one small write per level, and a folder
written a thousand times between two syncs is hashed once.

Cost per mutation, d the path's depth (/a/b/c.txt: 3): 1 write for the node (1 WCU, the item
is well under 1 KB) + d ancestor updates (1 WCU each), i.e. d + 1 WCUs, $2.50 per million
uploads at depth 3 ($0.625 per million WCUs on demand, cost/prices.json); a delete's
node write is its tombstone. A subtree move or copy of n nodes adds n consistent reads and n
writes (2n for a move). The route spends one Query per requested path plus, per stale folder,
one Query and one conditional write.
"""

from __future__ import annotations

import json
import math
import secrets
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from itertools import batched
from typing import Any

from boto3.dynamodb.conditions import Attr, ConditionBase, Key
from botocore.exceptions import ClientError

from ..merkle.entries import parent_of
from ..merkle.exchange import VIRTUAL_ROOT, NodeSummary
from ..merkle.hashing import dir_hash, file_hash
from .records import _plain, query_all

ROOT = "/"
ANSWER_BUDGET_S = 10.0  # of work per exchange request: well inside API Gateway's 29 s
ANSWER_BATCH = 100  # paths whose children are read side by side
# of JSON per exchange answer: a Lambda function answers at most 6 MB (100 folders of 1,000 files
# are 11.6 MB, which API Gateway met with a 504); paths past it are left out and asked for again
ANSWER_BYTES = 4 * 1024 * 1024
SUBTREE_ITEMS = 1000  # a folder with at most this many items below it is read whole
TRANSACTION = 100  # items of one TransactWriteItems
UNREAD = "unread"  # generation of a folder not seen before its children: its hash is not stored
_POOL = ThreadPoolExecutor(16)
_WRITES = ThreadPoolExecutor(8)  # leaf work only: nothing it runs waits on a pool


def _write_batch(table: Any, keys: list[dict[str, Any]]) -> None:
    """One BatchWriteItem of deletes, what DynamoDB leaves unprocessed sent again."""
    pending: dict[str, Any] = {table.name: [{"DeleteRequest": {"Key": k}} for k in keys]}
    for attempt in range(8):
        pending = table.meta.client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
        if not pending:
            return
        time.sleep(0.05 * 2**attempt)
    raise RuntimeError("DynamoDB kept some deletes unprocessed")


TOMBSTONE_TTL_S = 30 * 86400  # a device that has not synced for 30 days compares by content alone


def node_key(path: str) -> str:
    if path == ROOT:
        return ROOT
    parent, name = path.rsplit("/", 1)
    return f"{parent or ROOT}//{name}"


def children_prefix(path: str) -> str:
    return "///" if path == ROOT else f"{path}//"


def ancestors(path: str) -> list[str]:
    """The folders above `path`, deepest first, the root last."""
    out: list[str] = []
    while path != ROOT:
        path = parent_of(path)
        out.append(path)
    return out


def _under(path: str, src: str, dst: str) -> str:
    return dst + path[len(src) :]


def _depth(path: str) -> int:
    return 0 if path == ROOT else path.count("/")


class MerkleRecords:
    """One user's tree in the table: written by every mutation, read by the exchange route."""

    def __init__(self, table: Any, user: str) -> None:
        self.table, self.pk = table, f"MK#{user}"

    # --- what mutations call ------------------------------------------------------------------
    def file_written(self, path: str, digest: str, mtime: float) -> None:
        """A file now holds content `digest` (hex content hash)."""
        self.table.put_item(Item=self._file_item(path, digest, mtime))
        self.invalidate(ancestors(path))

    def files_written(self, files: Sequence[tuple[str, str, float]]) -> None:
        """Many files (path, digest, mtime) written together, a bundle's: their items in batches,
        then each folder above them invalidated once, deepest first, not once per file."""
        with self.table.batch_writer() as batch:
            for path, digest, mtime in files:
                batch.put_item(Item=self._file_item(path, digest, mtime))
        folders = {a for path, _, _ in files for a in ancestors(path)}
        for depth in sorted({_depth(f) for f in folders}, reverse=True):
            level = sorted(f for f in folders if _depth(f) == depth)
            _parallel(lambda f: self.invalidate([f]), level)

    def dir_made(self, path: str) -> None:
        """A folder exists at `path` (and its parents)."""
        self.invalidate([path, *ancestors(path)] if path != ROOT else [ROOT])

    def removed(self, path: str, when: float | None = None) -> None:
        """A file or a whole folder is gone: a tombstone replaces it, then what was below goes."""
        when = time.time() if when is None else when
        self.table.put_item(
            Item={
                "pk": self.pk,
                "sk": node_key(path),
                "path": path,
                "kind": "tombstone",
                "mtime": _num(when),
                "expiration": int(when) + TOMBSTONE_TTL_S,
            }
        )
        self._delete(self._below(path))
        self.invalidate(ancestors(path))

    def copied(self, src: str, dst: str) -> None:
        """The live nodes at and below `src` now also exist at and below `dst` (replacing them)."""
        top = self.get(src)
        if top is None or top["kind"] == "tombstone":
            return  # nothing to copy: or already moved (a job step done twice)
        items = [top, *self._below(src)]
        self._delete(self._below(dst))
        dirs: list[str] = []
        with self.table.batch_writer() as batch:
            for item in items:
                path = _under(item["path"], src, dst)
                if item["kind"] == "file":
                    batch.put_item(Item=self._file_item(path, item["digest"], float(item["mtime"])))
                elif item["kind"] == "dir":
                    dirs.append(path)
        # folders are (re)made afterwards, deepest first: no reader can hash one before its content
        self.invalidate(sorted(dirs, key=_depth, reverse=True) + ancestors(dst))

    def moved(self, src: str, dst: str) -> None:
        self.copied(src, dst)
        top = self.get(src)
        if top is not None and top["kind"] != "tombstone":
            self.removed(src)

    # --- what the route calls -----------------------------------------------------------------
    def answer(
        self, paths: Sequence[str], budget_s: float = ANSWER_BUDGET_S, max_bytes: int = ANSWER_BYTES
    ) -> dict[str, list[dict[str, Any]]]:
        """One round of the exchange (merkle/exchange.py's message), or as much of it as fits in
        `budget_s` and in `max_bytes` of JSON: paths left out of the answer are asked for again
        (the first path is always answered, whatever its size).

        Paths are answered a batch at a time. A folder whose subtree is small is read whole in one
        Query (its children and everything below, so stale folders inside it cost no more reads);
        reads run side by side and stale folders are recomputed level by level (`_freshen`), so
        1,000 paths cost a few dozen round trips to DynamoDB instead of thousands one after
        another. Hashes recomputed are stored before the budget runs out, so the next request
        starts where this one stopped.
        """
        deadline, reads = time.monotonic() + budget_s, _Reads(self)
        out: dict[str, list[dict[str, Any]]] = {}
        size = 2  # the braces
        for batch in batched(paths, ANSWER_BATCH):
            if out and time.monotonic() > deadline:
                break
            reads.read(batch)
            kids = {p: reads.of(p) for p in batch}
            self._freshen([k for items in kids.values() for k in items], deadline, reads)
            for p, items in kids.items():
                if not all(k.get("hash") or k["kind"] == "tombstone" for k in items):
                    continue
                summaries = [self._summary(k).to_dict() for k in items]
                size += len(json.dumps({p: summaries}, default=str)) + 1
                if out and size > max_bytes:
                    return out
                out[p] = summaries
        return out

    def sketch_reads(self, budget_s: float = ANSWER_BUDGET_S) -> SketchReads:
        """What the one-round exchange (merkle/sketch.py) reads the tree through."""
        return SketchReads(self, time.monotonic() + budget_s)

    def children(self, path: str) -> list[NodeSummary]:
        reads = _Reads(self)
        reads.read([path])
        items = reads.of(path)
        self._freshen(items, math.inf, reads)
        return [self._summary(i) for i in items]

    def root_item(self) -> dict[str, Any]:
        item = self.get(ROOT) or {"path": ROOT, "kind": "dir", "mtime": 0}
        return self._fresh(item)

    def items(self) -> list[dict[str, Any]]:
        """Every item of the tree (upkeep's comparison)."""
        return query_all(self.table, Key("pk").eq(self.pk), consistent=True)

    # --- internals ----------------------------------------------------------------------------
    def _file_item(self, path: str, digest: str, mtime: float) -> dict[str, Any]:
        return {
            "pk": self.pk,
            "sk": node_key(path),
            "path": path,
            "kind": "file",
            "digest": digest,
            "hash": file_hash(path, bytes.fromhex(digest)).hex(),
            "mtime": _num(mtime),
        }

    def invalidate(self, folders: Iterable[str]) -> None:
        """Each folder (in the order given: deepest first) exists, with a new generation and no hash."""
        now = _num(time.time())
        for path in folders:
            self.table.update_item(
                Key={"pk": self.pk, "sk": node_key(path)},
                UpdateExpression="SET #k = :dir, #p = :path, gen = :gen, mtime = if_not_exists(mtime, :now) "
                "REMOVE #h, expiration",
                ExpressionAttributeNames={"#k": "kind", "#p": "path", "#h": "hash"},
                ExpressionAttributeValues={
                    ":dir": "dir",
                    ":path": path,
                    ":gen": secrets.token_hex(8),
                    ":now": now,
                },
            )

    def _live_children(self, path: str) -> list[dict[str, Any]]:
        """A folder's child items, by path, without expired tombstones ("": the root itself)."""
        if path == VIRTUAL_ROOT:
            return [self.get(ROOT) or {"path": ROOT, "kind": "dir", "mtime": 0}]
        now = time.time()
        items = [i for i in self._query(children_prefix(path)) if not _expired(i, now)]
        return sorted(items, key=lambda i: i["path"])

    def subtree(self, path: str) -> tuple[dict[str, list[dict[str, Any]]], bool]:
        """{folder: its child items} for `path` and, when a child folder is stale and at most
        SUBTREE_ITEMS items lie below it, for every folder below it too (then True).

        Children that all have their hashes answer alone: reading ahead below them (a page of
        up to SUBTREE_ITEMS items, discarded when the subtree is larger) would only cost time.
        A stale folder's generation must be read before its children (see above); one Query
        does not promise which of them it reads first, so when the subtree holds stale folders
        it is read twice: generations from the first read, children from the second.
        """
        children = self._live_children(path)
        if path == VIRTUAL_ROOT or not any(_stale(i) for i in children):
            return {path: children}, False  # the children have their hashes: nothing below is needed
        prefix = "/" if path == ROOT else path + "/"
        first = self._page(prefix)
        if first is None:
            return {path: children}, False
        if not any(_stale(i) for i in first):
            return _by_parent(first), True
        second = self._page(prefix)
        if second is None:
            return {path: children}, False
        gens = {i["path"]: i.get("gen", UNREAD) for i in first}
        for item in second:
            if _stale(item):
                item["gen"] = gens.get(item["path"], UNREAD)
        return _by_parent(second), True

    def _page(self, prefix: str) -> list[dict[str, Any]] | None:
        """The items whose keys start with `prefix`, if they fit SUBTREE_ITEMS; else None."""
        page = self.table.query(
            KeyConditionExpression=Key("pk").eq(self.pk) & Key("sk").begins_with(prefix),
            Limit=SUBTREE_ITEMS,
            ConsistentRead=True,
        )
        return None if "LastEvaluatedKey" in page else [_plain(i) for i in page["Items"]]

    def _fresh(self, item: dict[str, Any]) -> dict[str, Any]:
        """The item with its hash, recomputing (and storing) a stale folder's from its children."""
        self._freshen([item], math.inf, _Reads(self))
        return item

    def _freshen(self, items: list[dict[str, Any]], deadline: float, reads: _Reads) -> None:
        """Give every stale folder among `items` its hash, in place (and store it).

        Level by level: the children of all the stale folders of one level are read side by
        side (most often already read with a subtree), down to the deepest stale level; then
        hashes are computed deepest first and stored. Past the deadline the descent stops: a
        folder whose stale children were not reached keeps no hash, and what was computed below
        it is stored all the same.
        """
        levels: list[list[dict[str, Any]]] = []
        kids: dict[int, list[dict[str, Any]]] = {}
        stale = [i for i in items if _stale(i)]
        while stale and time.monotonic() <= deadline:
            levels.append(stale)
            reads.read([i["path"] for i in stale])
            for item in stale:
                kids[id(item)] = reads.of(item["path"])
            stale = [k for i in stale for k in kids[id(i)] if _stale(k)]
        for level in reversed(levels):
            self._store_hashes([i for i in level if self._hash_from(i, kids[id(i)])])

    @staticmethod
    def _hash_from(item: dict[str, Any], kids: list[dict[str, Any]]) -> bool:
        """Set a stale folder's hash and mtime from its children's; False if one has none yet."""
        live = [k for k in kids if k["kind"] != "tombstone"]
        if any(not k.get("hash") for k in live):
            return False
        files = [bytes.fromhex(k["hash"]) for k in live if k["kind"] == "file"]
        dirs = [bytes.fromhex(k["hash"]) for k in live if k["kind"] == "dir"]
        item["hash"] = dir_hash(item["path"], files, dirs).hex()
        item["mtime"] = max([float(k["mtime"]) for k in kids] + [float(item.get("mtime", 0))])
        return True

    def _store_hashes(self, items: list[dict[str, Any]]) -> None:
        """Store recomputed hashes, a transaction of conditional writes at a time; a transaction
        refused (a mutation came in between for one of them) is stored one by one."""
        client = self.table.meta.client
        once = {i["path"]: i for i in items}  # a folder read twice: the same hash twice
        groups = [list(g) for g in batched(once.values(), TRANSACTION)]

        def store(group: list[dict[str, Any]]) -> None:
            if len(group) > 1:
                try:
                    client.transact_write_items(TransactItems=[self._hash_write(i) for i in group])
                    return
                except ClientError:  # cancelled (a mutation came in between), or refused as a whole
                    pass
            for i in group:
                self._store_hash(i["path"], i.get("gen"), i["hash"], i["mtime"])

        _parallel(store, groups)

    def _hash_write(self, item: dict[str, Any]) -> dict[str, Any]:
        gen = item.get("gen")
        unchanged = "gen = :g" if gen is not None else "attribute_not_exists(gen)"
        if item["path"] != ROOT:
            unchanged += " AND #k = :dir"
        values = {":h": item["hash"], ":m": _num(item["mtime"]), ":dir": "dir", ":path": item["path"]}
        return {
            "Update": {
                "TableName": self.table.name,
                "Key": {"pk": self.pk, "sk": node_key(item["path"])},
                "UpdateExpression": "SET #h = :h, mtime = :m, #k = :dir, #p = :path",
                "ConditionExpression": unchanged,
                "ExpressionAttributeNames": {"#h": "hash", "#k": "kind", "#p": "path"},
                "ExpressionAttributeValues": {**values, **({":g": gen} if gen is not None else {})},
            }
        }

    def _store_hash(self, path: str, gen: str | None, digest: str, mtime: float) -> None:
        unchanged: ConditionBase = Attr("gen").eq(gen) if gen is not None else Attr("gen").not_exists()
        if path != ROOT:
            unchanged = unchanged & Attr("kind").eq("dir")
        try:
            self.table.update_item(
                Key={"pk": self.pk, "sk": node_key(path)},
                UpdateExpression="SET #h = :h, mtime = :m, #k = :dir, #p = :path",
                ConditionExpression=unchanged,
                ExpressionAttributeNames={"#h": "hash", "#k": "kind", "#p": "path"},
                ExpressionAttributeValues={":h": digest, ":m": _num(mtime), ":dir": "dir", ":path": path},
            )
        except ClientError as err:
            if err.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise  # else a mutation came in between: its invalidation stands

    def _summary(self, item: dict[str, Any]) -> NodeSummary:
        tomb = item["kind"] == "tombstone"
        return NodeSummary(
            item["path"], item["kind"], b"" if tomb else bytes.fromhex(item["hash"]), float(item["mtime"])
        )

    def get(self, path: str) -> dict[str, Any] | None:
        got = self.table.get_item(Key={"pk": self.pk, "sk": node_key(path)}, ConsistentRead=True).get("Item")
        return dict(got) if got else None

    def _query(self, prefix: str) -> list[dict[str, Any]]:
        return query_all(self.table, Key("pk").eq(self.pk) & Key("sk").begins_with(prefix), consistent=True)

    def _below(self, path: str) -> list[dict[str, Any]]:
        return self.items() if path == ROOT else self._query(path + "/")

    def _delete(self, items: list[dict[str, Any]]) -> None:
        """Delete nodes 25 to a request, the requests side by side (a folder's removal or move
        waits on these: sequential batches were most of an `rm -r`'s time)."""
        keys = [{"pk": item["pk"], "sk": item["sk"]} for item in items]
        list(_WRITES.map(lambda chunk: _write_batch(self.table, list(chunk)), batched(keys, 25)))


def _num(value: float) -> Decimal:
    return Decimal(repr(round(float(value), 6)))


class OutOfTime(Exception):
    """The exchange's work budget ran out before every folder that differs was read."""


class SketchReads:
    """merkle/sketch.py's TreeReader over the records: the compared folders by GetItem, side by
    side; then, per level, the children of the folders that differ, one Query each, side by side
    (`answer`, which recomputes stale hashes). Nothing below an equal folder is read."""

    def __init__(self, tree: MerkleRecords, deadline: float) -> None:
        self.tree, self.deadline = tree, deadline
        self.queries = 0  # folders read (a GetItem or one Query each, a stale hash's recompute aside)
        self.rounds = 0  # reads made one after another (each round's side by side)

    def nodes(self, paths: Sequence[str]) -> dict[str, NodeSummary | None]:
        items = _parallel(self._node, paths)
        self.queries, self.rounds = self.queries + len(paths), self.rounds + 1
        return dict(zip(paths, items, strict=True))

    def _node(self, path: str) -> NodeSummary | None:
        item = self.tree.root_item() if path == ROOT else self.tree.get(path)
        if item is None or _expired(item, time.time()):
            return None
        if item["kind"] != "tombstone":
            item = self.tree._fresh(item)
            if not item.get("hash"):
                raise OutOfTime(f"{path}: its hash is being recomputed")
        return self.tree._summary(item)

    def children(self, paths: Sequence[str]) -> dict[str, list[NodeSummary]]:
        got = self.tree.answer(paths, max(0.0, self.deadline - time.monotonic()))
        self.queries, self.rounds = self.queries + len(paths), self.rounds + 1
        if any(p not in got for p in paths):
            raise OutOfTime(f"{len(paths) - len(got)} folders not read in time")
        return {p: [NodeSummary.from_dict(d) for d in got[p]] for p in paths}


class _Reads:
    """The child lists one request has read: a folder read whole is never queried again, nor is
    anything below it."""

    def __init__(self, tree: MerkleRecords) -> None:
        self.tree = tree
        self.known: dict[str, list[dict[str, Any]]] = {}
        self.whole: set[str] = set()

    def _covered(self, path: str) -> bool:
        if path in self.known or path == VIRTUAL_ROOT:
            return path in self.known
        return any(a in self.whole for a in [path, *ancestors(path)])

    def read(self, paths: Sequence[str]) -> None:
        """Read what is not known yet: first the paths with no other of them above, then the rest."""
        wanted = {p for p in paths if not self._covered(p)}
        tops = {p for p in wanted if not p or not any(a in wanted for a in ancestors(p))}
        for group in (sorted(tops), sorted(wanted - tops)):
            group = [p for p in group if not self._covered(p)]
            for path, (below, whole) in zip(group, _parallel(self.tree.subtree, group), strict=True):
                self.known.update(below)
                if whole:
                    self.whole.add(path)

    def of(self, path: str) -> list[dict[str, Any]]:
        return self.known.get(path, [])


def _by_parent(items: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Live items below a folder, grouped by their parent and sorted by path."""
    now = time.time()
    out: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        if item["path"] != ROOT and not _expired(item, now):
            out.setdefault(parent_of(item["path"]), []).append(item)
    for group in out.values():
        group.sort(key=lambda i: i["path"])
    return out


def _stale(item: dict[str, Any]) -> bool:
    return item["kind"] == "dir" and not item.get("hash")


def _parallel[T, R](fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """fn over items side by side: each call waits on DynamoDB's round trip, not the CPU."""
    if len(items) <= 1:
        return [fn(i) for i in items]
    return list(_POOL.map(fn, items))


def _expired(item: dict[str, Any], now: float) -> bool:
    """A tombstone past its TTL (DynamoDB deletes it within days, not at once)."""
    return item["kind"] == "tombstone" and float(item.get("expiration", now + 1)) <= now
