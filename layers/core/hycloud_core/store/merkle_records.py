"""A user's Merkle tree (merkle/hashing.py) kept in DynamoDB, one item per node, for the exchange route.

Key (one partition per user, records.py's table), as the file records are keyed (dir_index.py)::

    pk = "MK#<user>"
    sk = "/"                      the root
         "<parent folder id>/<name>"  any other node: "root/docs", "3f9a…/a.txt"

so the children of a folder are exactly `begins_with(sk, id + "/")`: one Query. A folder's item
holds its own `id` (the directory index's), which its children are keyed by; nothing below a
folder names the folder's path. Hashes are git-tree-like: a node's hash does not depend on its
own name or place, only a folder's hash names its children. So a move or rename writes the moved
node at its new key with the hash it had and a tombstone at the old one, then invalidates the two
chains of parents: O(depth), whatever the folder holds. A copy writes every node below again
(under new folder ids) but keeps their hashes: nothing is re-hashed.

Attributes: `name`; `kind` (file, dir or tombstone); `mtime` (a tombstone's: when the deletion
happened); `hash` (hex; absent on a directory whose hash is stale); a file's `digest` (its
content hash, content.py); a directory's `id` and `gen`; a tombstone's `expiration` (TTL,
TOMBSTONE_TTL_S). Reads add `path`, from the path they were asked about. Beside a folder's
children, at `<folder id>/`, its listing (`listing`: wire.encode_listing of the live children,
named by the hash they make), written when its hash is recomputed (store/sketch_reads.py).

Invalidation, not eager recompute: a mutation writes the node it changes, then, deepest first,
gives every ancestor a new random `gen` and removes its `hash`. The route recomputes a missing
hash bottom-up from the children's items and stores it only if `gen` is still the one it read
before reading the children, so a mutation racing with it (which writes its node before it
touches the ancestors) always leaves the hash missing, never stale. Random generations rule
out ABA (a folder removed and made again).

A folder put in the trash keeps its nodes under its id (they follow its directory entry below
the trash's root); emptying the trash drops them (`drop_trashed`). A folder removed for good
has the nodes below it dropped at once.

Cost per mutation, d the path's depth (/a/b/c.txt: 3): d consistent reads to resolve the folder
ids (one per level, as the file record's write does), 1 write for the node and d ancestor
updates (1 WCU each). The route spends, per requested folder, its id's resolution (cached within
the request) and one Query, plus one Query and one conditional write per stale folder.

Trees written before this layout were keyed by path (`<parent path>//<name>`, each node's hash
over its path); `drop_path_layout` removes them and upkeep's repair (fs/merkle_scan.py) writes the
tree again from EFS (fs/reconcile.py runs both, then marks the partition's `LAYOUT`).
"""

from __future__ import annotations

import json
import math
import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from itertools import batched
from typing import Any

from boto3.dynamodb.conditions import Attr, ConditionBase, Key
from botocore.exceptions import ClientError

from .. import paths
from ..merkle import wire
from ..merkle.entries import DirEntry, Entry, FileEntry, parent_of
from ..merkle.exchange import VIRTUAL_ROOT, NodeSummary
from ..merkle.hashing import dir_hash, file_hash
from .dir_index import ROOT as ROOT_ID
from .dir_index import TRASH, Resolver
from .pages import in_rounds, plain, query_all

ROOT = "/"
ROOT_SK = "/"
LAYOUT_SK = "LAYOUT"
LAYOUT_VERSION = 3  # nodes keyed by folder id, hashes that name a child only at its parent
ANSWER_BUDGET_S = 10.0  # of work per exchange request: well inside API Gateway's 29 s
ANSWER_BATCH = 100  # paths whose children are read side by side
# of JSON per exchange answer: a Lambda function answers at most 6 MB (100 folders of 1,000 files
# are 11.6 MB, which API Gateway met with a 504); paths past it are left out and asked for again
ANSWER_BYTES = 4 * 1024 * 1024
TRANSACTION = 100  # items of one TransactWriteItems
# what a Query of a folder's children reads (its listing's item is matched too, with none of these)
CHILD_FIELDS = ("pk", "sk", "name", "kind", "mtime", "hash", "digest", "id", "gen", "expiration")
TOMBSTONE_TTL_S = 30 * 86400  # a device that has not synced for 30 days compares by content alone
_POOL = ThreadPoolExecutor(16)
_WRITES = ThreadPoolExecutor(8)  # leaf work only: nothing it runs waits on a pool

DROP_ROUND = 400  # nodes a bounded drop deletes between two looks at its deadline (16 requests)


def child_sk(folder_id: str, name: str) -> str:
    return f"{folder_id}/{name}"


def listing_sk(folder_id: str) -> str:
    """The key of a folder's listing: its children's (an empty name sorts first; no node has one)."""
    return f"{folder_id}/"


def ancestors(path: str) -> list[str]:
    """The folders above `path`, deepest first, the root last."""
    out: list[str] = []
    while path != ROOT:
        path = parent_of(path)
        out.append(path)
    return out


def _depth(path: str) -> int:
    return 0 if path == ROOT else path.count("/")


def _join(folder: str, name: str) -> str:
    return f"{folder.rstrip('/')}/{name}"


def _write_batch(table: Any, requests: list[dict[str, Any]]) -> None:
    """One BatchWriteItem, what DynamoDB leaves unprocessed sent again."""
    pending: dict[str, Any] = {table.name: requests}
    for attempt in range(8):
        pending = table.meta.client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
        if not pending:
            return
        time.sleep(0.05 * 2**attempt)
    raise RuntimeError("DynamoDB kept some writes unprocessed")


class MerkleRecords:
    """One user's tree in the table: written by every mutation, read by the exchange route."""

    def __init__(self, table: Any, user: str) -> None:
        self.table, self.user, self.pk = table, user, f"MK#{user}"

    def resolver(self) -> Resolver:
        """Folder ids for one call (never kept across calls: another request may move them)."""
        return Resolver(self.table, self.user)

    # --- what mutations call ------------------------------------------------------------------
    def file_written(self, path: str, digest: str, mtime: float) -> None:
        """A file now holds content `digest` (hex content hash)."""
        r = self.resolver()
        self.table.put_item(Item=self._file_item(self._sk(r, path), path, digest, mtime))
        self.invalidate(ancestors(path), r)

    def files_written(self, files: Sequence[tuple[str, str, float]]) -> None:
        """Many files (path, digest, mtime) written together, a bundle's: their items in batches,
        then each folder above them invalidated once, deepest first, not once per file."""
        r = self.resolver()
        r.resolve_all({parent_of(path) for path, _, _ in files})
        items = [self._file_item(self._sk(r, path), path, digest, mtime) for path, digest, mtime in files]
        with self.table.batch_writer() as batch:
            for item in items:
                batch.put_item(Item=item)
        folders = {a for path, _, _ in files for a in ancestors(path)}
        for depth in sorted({_depth(f) for f in folders}, reverse=True):
            level = sorted(f for f in folders if _depth(f) == depth)
            _parallel(lambda f: self.invalidate([f], r), level)

    def dir_made(self, path: str) -> None:
        """A folder exists at `path` (and its parents)."""
        self.invalidate([path, *ancestors(path)] if path != ROOT else [ROOT])

    def removed(self, path: str, when: float | None = None, trashed: bool = False) -> None:
        """A file or a whole folder is gone: a tombstone replaces it. What was below a folder is
        dropped, unless the folder went to the trash (`trashed`: its nodes stay with its id)."""
        when = time.time() if when is None else when
        r = self.resolver()
        sk = self._sk(r, path)
        before = self._get_sk(sk) if not trashed else None
        self.table.put_item(Item=self._tombstone(sk, path, when))
        if before is not None and before["kind"] == "dir" and before.get("id"):
            self.drop_below(str(before["id"]))
        self.invalidate(ancestors(path), r)

    def moved(self, src: str, dst: str) -> None:
        """The node at `src` (and so all below it) is now at `dst`: O(depth). Call it after the
        directory index moved the folder's entry; a second call (a job step done twice) does nothing."""
        r = self.resolver()
        src_sk = self._sk(r, src)
        item = self._get_sk(src_sk)
        if item is None or item["kind"] == "tombstone":
            return
        dst_sk = self._sk(r, dst)
        moved = {**item, "sk": dst_sk, "name": paths.name(dst)}
        moved.pop("path", None)
        self.table.put_item(Item=_storable(moved))
        self.table.put_item(Item=self._tombstone(src_sk, src, time.time()))
        folders = set(ancestors(src)) | set(ancestors(dst))
        self.invalidate(sorted(folders, key=_depth, reverse=True), r)

    def copied(self, src: str, dst: str) -> None:
        """The live nodes at and below `src` now also exist at and below `dst`, with the hashes
        they have (equal content, equal hashes): written deepest first, so no reader sees a
        folder's hash before what it covers."""
        r = self.resolver()
        top = self._get_sk(self._sk(r, src))
        if top is None or top["kind"] == "tombstone":
            return  # nothing to copy: or already moved (a job step done twice)
        writes: list[tuple[int, dict[str, Any]]] = []
        level = [(top, dst)]
        while level:
            below: list[tuple[dict[str, Any], str]] = []
            for item, at in level:
                copy = {k: v for k, v in item.items() if k not in ("path",)}
                copy.update(sk=self._sk(r, at), name=paths.name(at))
                if item["kind"] == "dir":
                    copy["id"] = r.dir_id(at, create=True) or ROOT_ID
                    kids = self._children_of(str(item["id"])) if item.get("id") else []
                    below += [(k, _join(at, str(k["name"]))) for k in kids if k["kind"] != "tombstone"]
                writes.append((_depth(at), copy))
            level = below
        for _, group in _by_depth(writes):
            self._put_many(group)
        self.invalidate(ancestors(dst), r)

    def drop_trashed(self, item_id: str) -> None:
        """The nodes of a trashed folder, for good (emptying the trash; before its entry goes)."""
        folder = Resolver(self.table, self.user, TRASH).dir_id(f"/{item_id}")
        if folder is not None:
            self.drop_below(folder)

    def drop_below(self, folder_id: str, deadline: float | None = None) -> bool:
        """Every node below the folder with this id (one Query per folder, a level at a time);
        False when `deadline` (monotonic) passed first. Deepest first, DROP_ROUND at a time (one
        round at least, so every call gets on), and what is left is still reached from the folder
        for the next call to find."""
        keys: list[dict[str, Any]] = []
        level = [folder_id]
        while level:
            found = _parallel(self._children_of, level)
            keys += [{"pk": self.pk, "sk": listing_sk(f)} for f in level]
            level = []
            for kids in found:
                keys += [{"pk": self.pk, "sk": k["sk"]} for k in kids]
                level += [str(k["id"]) for k in kids if k["kind"] == "dir" and k.get("id")]
        return in_rounds(keys[::-1], DROP_ROUND, deadline, self._delete)

    # --- what the route calls -----------------------------------------------------------------
    def answer(
        self, paths: Sequence[str], budget_s: float = ANSWER_BUDGET_S, max_bytes: int = ANSWER_BYTES
    ) -> dict[str, list[dict[str, Any]]]:
        """One round of the exchange (merkle/exchange.py's message), or as much of it as fits in
        `budget_s` and in `max_bytes` of JSON: paths left out of the answer are asked for again
        (the first path is always answered, whatever its size).

        Paths are answered a batch at a time: their folder ids resolved (each level read once
        per request), their children read side by side, stale folders recomputed level by level
        (`_freshen`). Hashes recomputed are stored before the budget runs out, so the next
        request starts where this one stopped.
        """
        deadline, reads = time.monotonic() + budget_s, _Reads(self)
        out: dict[str, list[dict[str, Any]]] = {}
        size = 2  # the braces
        for batch in batched(paths, ANSWER_BATCH):
            if out and time.monotonic() > deadline:
                break
            kids = reads.children_at(list(batch))
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

    def children(self, path: str) -> list[NodeSummary]:
        reads = _Reads(self)
        items = reads.children_at([path])[path]
        self._freshen(items, math.inf, reads)
        return [self._summary(i) for i in items]

    def root(self) -> dict[str, Any]:
        """The root's item as kept (an empty folder's until one is written)."""
        return self.get(ROOT) or {"sk": ROOT_SK, "path": ROOT, "kind": "dir", "mtime": 0}

    def root_item(self) -> dict[str, Any]:
        item = self.root()
        return self._fresh(item)

    def items(self) -> list[dict[str, Any]]:
        """Every node of the live tree with its path (upkeep's comparison): the partition in one
        paged Query, the paths put together from the folder ids in memory. Nodes no folder of
        the live tree leads to (a trashed folder's, kept until it is purged) are left out."""
        below: dict[str, list[dict[str, Any]]] = {}
        root = None
        for item in query_all(self.table, Key("pk").eq(self.pk), consistent=True, fields=CHILD_FIELDS):
            if item["sk"] == ROOT_SK:
                root = item
            elif not item["sk"].startswith("/") and "/" in item["sk"] and item.get("kind"):
                # not LAYOUT, a path key nor a listing
                below.setdefault(item["sk"].split("/", 1)[0], []).append(item)
        out = [{**root, "path": ROOT}] if root else []
        stack = [(ROOT_ID, ROOT)]
        while stack:
            folder, at = stack.pop()
            for kid in below.get(folder, []):
                kid["path"] = _join(at, str(kid["name"]))
                out.append(kid)
                if kid["kind"] == "dir" and kid.get("id"):
                    stack.append((str(kid["id"]), kid["path"]))
        return out

    def get(self, path: str, r: Resolver | None = None) -> dict[str, Any] | None:
        """The node at `path`, with its path; None when there is none (or no folder above it).
        `r`: the request's resolver, whose folder ids it reuses."""
        if path == ROOT:
            item = self._get_sk(ROOT_SK)
        else:
            parent = (r or self.resolver()).dir_id(parent_of(path))
            item = None if parent is None else self._get_sk(child_sk(parent, paths.name(path)))
        if item is not None:
            item["path"] = path
        return item

    # --- the layout before this one -----------------------------------------------------------
    def layout_version(self) -> int:
        item = self._get_sk(LAYOUT_SK)
        return int(item.get("version", 0)) if item else 0

    def drop_path_layout(self) -> int:
        """Delete the nodes keyed by path (every key but the root's starts with "/"); how many."""
        old = query_all(self.table, Key("pk").eq(self.pk) & Key("sk").begins_with("/"), consistent=True)
        keys = [{"pk": self.pk, "sk": i["sk"]} for i in old if i["sk"] != ROOT_SK]
        self._delete(keys)
        if keys:
            self.invalidate([ROOT])
        return len(keys)

    def write_tree(self, entries: Mapping[str, Entry]) -> int:
        """Write the node of every entry of a listing of the namespace on EFS (merkle_scan.py) in
        batches, folders without their hashes (the route computes them from what is kept; one a
        mutation invalidated meanwhile stays invalidated) and parents last; how many nodes. The
        migration's bulk write: a file node a racing write outdated is repaired by the next upkeep."""
        r, now = self.resolver(), time.time()
        folders = {ROOT} | {a for p in entries for a in ancestors(p)}
        folders |= {p for p, e in entries.items() if isinstance(e, DirEntry)}
        r.resolve_all(folders)
        writes: list[tuple[int, dict[str, Any]]] = []
        for path, entry in entries.items():
            if isinstance(entry, FileEntry):
                item = self._file_item(self._sk(r, path), path, entry.content_hash.hex(), entry.mtime)
                writes.append((_depth(path), item))
        for path in folders:
            own = ROOT_ID if path == ROOT else r.dir_id(path, create=True)
            name = paths.name(path) if path != ROOT else ""
            item = {"pk": self.pk, "sk": self._sk(r, path), "kind": "dir", "id": own, "name": name}
            writes.append((_depth(path), {**item, "mtime": now, "gen": secrets.token_hex(8)}))
        for _, group in _by_depth(writes):
            self._put_many(group)
        return len(writes)

    def mark_layout(self) -> None:
        self.table.put_item(Item={"pk": self.pk, "sk": LAYOUT_SK, "version": LAYOUT_VERSION})

    # --- internals ----------------------------------------------------------------------------
    def _sk(self, r: Resolver, path: str) -> str:
        """The key of the node at `path`, the folders above it indexed if they were not."""
        if path == ROOT:
            return ROOT_SK
        return child_sk(r.dir_id(parent_of(path), create=True) or ROOT_ID, paths.name(path))

    def _file_item(self, sk: str, path: str, digest: str, mtime: float) -> dict[str, Any]:
        return {
            "pk": self.pk,
            "sk": sk,
            "name": paths.name(path),
            "kind": "file",
            "digest": digest,
            "hash": file_hash(bytes.fromhex(digest)).hex(),
            "mtime": _num(mtime),
        }

    def _tombstone(self, sk: str, path: str, when: float) -> dict[str, Any]:
        return {
            "pk": self.pk,
            "sk": sk,
            "name": paths.name(path),
            "kind": "tombstone",
            "mtime": _num(when),
            "expiration": int(when) + TOMBSTONE_TTL_S,
        }

    def invalidate(self, folders: Iterable[str], r: Resolver | None = None) -> None:
        """Each folder (in the order given: deepest first) exists, with its id, a new generation
        and no hash."""
        r = r or self.resolver()
        now = _num(time.time())
        for path in folders:
            own = ROOT_ID if path == ROOT else r.dir_id(path, create=True)
            self.table.update_item(
                Key={"pk": self.pk, "sk": self._sk(r, path)},
                UpdateExpression="SET #k = :dir, #n = :name, id = :id, gen = :gen, "
                "mtime = if_not_exists(mtime, :now) REMOVE #h, expiration",
                ExpressionAttributeNames={"#k": "kind", "#n": "name", "#h": "hash"},
                ExpressionAttributeValues={
                    ":dir": "dir",
                    ":name": paths.name(path) if path != ROOT else "",
                    ":id": own,
                    ":gen": secrets.token_hex(8),
                    ":now": now,
                },
            )

    def _children_of(self, folder_id: str) -> list[dict[str, Any]]:
        """A folder's child items, sorted by name, without expired tombstones."""
        now = time.time()
        cond = Key("pk").eq(self.pk) & Key("sk").begins_with(folder_id + "/")
        found = query_all(self.table, cond, consistent=True, fields=CHILD_FIELDS)
        items = [i for i in found if i.get("kind") and not _expired(i, now)]  # not its listing
        return sorted(items, key=lambda i: str(i["name"]))

    def _fresh(self, item: dict[str, Any]) -> dict[str, Any]:
        """The item with its hash, recomputing (and storing) a stale folder's from its children."""
        self._freshen([item], math.inf, _Reads(self))
        return item

    def _freshen(self, items: list[dict[str, Any]], deadline: float, reads: _Reads) -> None:
        """Give every stale folder among `items` its hash, in place (and store it).

        Level by level: the children of all the stale folders of one level are read side by
        side, down to the deepest stale level; then hashes are computed deepest first and
        stored. Past the deadline the descent stops: a folder whose stale children were not
        reached keeps no hash, and what was computed below it is stored all the same.
        """
        levels: list[list[dict[str, Any]]] = []
        kids: dict[int, list[dict[str, Any]]] = {}
        stale = [i for i in items if _stale(i)]
        while stale and time.monotonic() <= deadline:
            levels.append(stale)
            reads.read([str(i.get("id") or ROOT_ID) for i in stale])
            for item in stale:
                kids[id(item)] = reads.of(str(item.get("id") or ROOT_ID))
            stale = [k for i in stale for k in kids[id(i)] if _stale(k)]
        for level in reversed(levels):
            self._store_hashes([i for i in level if self._hash_from(i, kids[id(i)])])

    @staticmethod
    def _hash_from(item: dict[str, Any], kids: list[dict[str, Any]]) -> bool:
        """Set a stale folder's hash and mtime from its children's; False if one has none yet."""
        live = [k for k in kids if k["kind"] != "tombstone"]
        if any(not k.get("hash") for k in live):
            return False
        digest = dir_hash((str(k["name"]), bytes.fromhex(k["hash"])) for k in live)
        item["hash"] = digest.hex()
        item["mtime"] = max([float(k["mtime"]) for k in kids] + [float(item.get("mtime", 0))])
        item["listing"] = listing_of(digest, live)
        return True

    def _store_hashes(self, items: list[dict[str, Any]]) -> None:
        """Store recomputed hashes, a transaction of conditional writes at a time; a transaction
        refused (a mutation came in between for one of them) is stored one by one. Their listings
        are written first: a reader that sees a hash finds its listing (one named by a hash a
        racing mutation kept from being stored is never used)."""
        client = self.table.meta.client
        once = {i["sk"]: i for i in items}  # a folder read twice: the same hash twice
        self.put_listings([i for i in once.values() if i.get("listing") is not None])
        groups = [list(g) for g in batched(once.values(), TRANSACTION)]

        def store(group: list[dict[str, Any]]) -> None:
            if len(group) > 1:
                try:
                    client.transact_write_items(TransactItems=[self._hash_write(i) for i in group])
                    return
                except ClientError:  # cancelled (a mutation came in between), or refused as a whole
                    pass
            for i in group:
                self._store_hash(i)

        _parallel(store, groups)

    def put_listings(self, folders: list[dict[str, Any]]) -> None:
        """Each folder's `listing` in its own item (`listing_sk`): not in the folder's, whose every
        invalidation would then be billed at the listing's size."""
        self._put_many(
            [
                {"pk": self.pk, "sk": listing_sk(str(f.get("id") or ROOT_ID)), "listing": f["listing"]}
                for f in folders
            ]
        )

    def _hash_write(self, item: dict[str, Any]) -> dict[str, Any]:
        gen = item.get("gen")
        unchanged = "gen = :g" if gen is not None else "attribute_not_exists(gen)"
        if item["sk"] != ROOT_SK:
            unchanged += " AND #k = :dir"
        update, values = _hash_update(item)
        return {
            "Update": {
                "TableName": self.table.name,
                "Key": {"pk": self.pk, "sk": item["sk"]},
                "UpdateExpression": update,
                "ConditionExpression": unchanged,
                "ExpressionAttributeNames": {"#h": "hash", "#k": "kind"},
                "ExpressionAttributeValues": {**values, **({":g": gen} if gen is not None else {})},
            }
        }

    def _store_hash(self, item: dict[str, Any]) -> None:
        gen = item.get("gen")
        unchanged: ConditionBase = Attr("gen").eq(gen) if gen is not None else Attr("gen").not_exists()
        if item["sk"] != ROOT_SK:
            unchanged = unchanged & Attr("kind").eq("dir")
        update, values = _hash_update(item)
        try:
            self.table.update_item(
                Key={"pk": self.pk, "sk": item["sk"]},
                UpdateExpression=update,
                ConditionExpression=unchanged,
                ExpressionAttributeNames={"#h": "hash", "#k": "kind"},
                ExpressionAttributeValues=values,
            )
        except ClientError as err:
            if err.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise  # else a mutation came in between: its invalidation stands

    def _summary(self, item: dict[str, Any]) -> NodeSummary:
        tomb = item["kind"] == "tombstone"
        return NodeSummary(
            item["path"], item["kind"], b"" if tomb else bytes.fromhex(item["hash"]), float(item["mtime"])
        )

    def _get_sk(self, sk: str) -> dict[str, Any] | None:
        got = self.table.get_item(Key={"pk": self.pk, "sk": sk}, ConsistentRead=True).get("Item")
        return plain(got) if got else None

    def _put_many(self, items: list[dict[str, Any]]) -> None:
        requests = [{"PutRequest": {"Item": _storable(i)}} for i in items]
        list(_WRITES.map(lambda chunk: _write_batch(self.table, list(chunk)), batched(requests, 25)))

    def _delete(self, keys: list[dict[str, Any]]) -> None:
        """Delete nodes 25 to a request, the requests side by side."""
        requests = [{"DeleteRequest": {"Key": k}} for k in keys]
        list(_WRITES.map(lambda chunk: _write_batch(self.table, list(chunk)), batched(requests, 25)))


def listing_of(digest: bytes, live: Sequence[dict[str, Any]]) -> bytes | None:
    """The listing of a folder of hash `digest` whose live child items are `live`."""
    entries = [
        (
            wire.Entry(str(k["name"]), k["kind"], bytes.fromhex(k["hash"]), float(k["mtime"])),
            str(k.get("id", "")),
        )
        for k in live
    ]
    return wire.encode_listing(digest, entries)


def _hash_update(item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A recomputed folder's hash and mtime."""
    return "SET #h = :h, mtime = :m, #k = :dir", {
        ":h": item["hash"],
        ":m": _num(item["mtime"]),
        ":dir": "dir",
    }


def _num(value: float) -> Decimal:
    return Decimal(repr(round(float(value), 6)))


def _storable(item: dict[str, Any]) -> dict[str, Any]:
    """A plain item as DynamoDB takes it back (no floats)."""
    return {k: _num(v) if isinstance(v, float) else v for k, v in item.items()}


def _by_depth(writes: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, list[dict[str, Any]]]]:
    """Items grouped by depth, deepest first."""
    groups: dict[int, list[dict[str, Any]]] = {}
    for depth, item in writes:
        groups.setdefault(depth, []).append(item)
    return sorted(groups.items(), reverse=True)


class _Reads:
    """The child lists one request has read, by folder id, and the folder ids it resolved."""

    def __init__(self, tree: MerkleRecords, ids: Mapping[str, str] | None = None) -> None:
        self.tree = tree
        self.resolver = tree.resolver()
        self.known: dict[str, list[dict[str, Any]]] = {}
        self.ids = dict(ids or {})

    def read(self, folder_ids: Sequence[str]) -> None:
        wanted = sorted({f for f in folder_ids if f not in self.known})
        for folder, kids in zip(wanted, _parallel(self.tree._children_of, wanted), strict=True):
            self.known[folder] = kids

    def of(self, folder_id: str) -> list[dict[str, Any]]:
        return self.known.get(folder_id, [])

    def children_at(self, paths: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """{path: its child items, each with its path} ("": the root itself; [] for no folder)."""
        ids = _parallel(self._folder_id, paths)
        self.read([i for i in ids if i is not None])
        out: dict[str, list[dict[str, Any]]] = {}
        for path, folder in zip(paths, ids, strict=True):
            if path == VIRTUAL_ROOT:
                out[path] = [self.tree.root()]
                continue
            kids = self.of(folder) if folder is not None else []
            for kid in kids:
                kid["path"] = _join(path, str(kid["name"]))
            out[path] = kids
        return out

    def _folder_id(self, path: str) -> str | None:
        if path == VIRTUAL_ROOT:
            return None
        if path in self.ids:
            return self.ids[path]
        return ROOT_ID if path == ROOT else self.resolver.dir_id(path)


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
