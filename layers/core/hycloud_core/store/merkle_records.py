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

import secrets
import time
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

from boto3.dynamodb.conditions import Attr, Key
from botocore.exceptions import ClientError

from ..merkle.entries import parent_of
from ..merkle.exchange import VIRTUAL_ROOT, NodeSummary
from ..merkle.hashing import dir_hash, file_hash
from .records import query_all

ROOT = "/"
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
    def answer(self, paths: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """One round of the exchange (merkle/exchange.py's message)."""
        return {path: [s.to_dict() for s in self.children(path)] for path in paths}

    def children(self, path: str) -> list[NodeSummary]:
        if path == VIRTUAL_ROOT:
            return [self._summary(self.root_item())]
        now = time.time()
        items = [i for i in self._query(children_prefix(path)) if not _expired(i, now)]
        return [self._summary(self._fresh(i)) for i in sorted(items, key=lambda i: i["path"])]

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

    def _fresh(self, item: dict[str, Any]) -> dict[str, Any]:
        """The item with its hash, recomputing (and storing) a stale folder's from its children."""
        if item["kind"] != "dir" or item.get("hash"):
            return item
        path, gen = item["path"], item.get("gen")
        now = time.time()
        kids = [self._fresh(k) for k in self._query(children_prefix(path)) if not _expired(k, now)]
        kids.sort(key=lambda k: k["path"])
        files = [bytes.fromhex(k["hash"]) for k in kids if k["kind"] == "file"]
        dirs = [bytes.fromhex(k["hash"]) for k in kids if k["kind"] == "dir"]
        digest = dir_hash(path, files, dirs).hex()
        mtime = max([float(k["mtime"]) for k in kids] + [float(item.get("mtime", 0))])
        self._store_hash(path, gen, digest, mtime)
        return {**item, "hash": digest, "mtime": mtime}

    def _store_hash(self, path: str, gen: str | None, digest: str, mtime: float) -> None:
        unchanged = Attr("gen").eq(gen) if gen is not None else Attr("gen").not_exists()
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
        with self.table.batch_writer() as batch:
            for item in items:
                batch.delete_item(Key={"pk": item["pk"], "sk": item["sk"]})


def _num(value: float) -> Decimal:
    return Decimal(repr(round(float(value), 6)))


def _expired(item: dict[str, Any], now: float) -> bool:
    """A tombstone past its TTL (DynamoDB deletes it within days, not at once)."""
    return item["kind"] == "tombstone" and float(item.get("expiration", now + 1)) <= now
