"""Subtree leases in DynamoDB: operations on the same or related paths run one at a time.

A lease on a path covers the whole subtree below it. Taking one is a single transaction: put
the path's lease item if it is free, and check that no ancestor holds a lease. Then the taker
waits until every lease already held below the path has been released (none can be taken
after the transaction, since those takers check their ancestors). So a tree copy, move or
removal never interleaves with a write inside the tree, and two writes to one path never
interleave either. Paths are taken in component order (a folder before what it contains), so
two operations never wait on each other; a lease expires on its own, so a crashed function
cannot block a subtree for longer than LEASE_S. This is the stop-and-wait ordering of related
operations (seed 000 §III-C) across concurrent controller invocations.

A snapshot being made (fs/snapshot_copy.py) holds a lease on its folder too, owned by
`snapshot_owner(id)`, but writes below it go on: a taker whose transaction fails on such an
ancestor is told (`on_snapshot`), which first copies what the write would change into the
snapshot, and then takes its lease past that one ancestor, named with its owner (so a snapshot
begun since is not passed unseen). A taker without `on_snapshot` waits, as for any lease.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from boto3.dynamodb.conditions import Key

from ..errors import ConflictError
from .pages import batch_get

LEASE_S = 60
WAIT_S = 10.0
MAX_TRANSACTION = 100  # items of one TransactWriteItems
_FREE = "attribute_not_exists(pk) OR expires < :now OR #o = :me"
SNAPSHOT_OWNER = "snapshot-"

# called with the snapshots being made above a path ({their folder: their lease's owner}) and the
# path, before its lease is taken past them: it copies into them what the write may change
OnSnapshot = Callable[[dict[str, str], str], None]


def snapshot_owner(snap_id: str) -> str:
    """The owner of the lease a snapshot being made holds on its folder."""
    return SNAPSHOT_OWNER + snap_id


def passing(_markers: dict[str, str], _path: str) -> None:
    """`on_snapshot` for takers that change no file's bytes nor any folder's entries (records,
    a file's representation): they pass a snapshot being made without copying."""


def _components(path: str) -> tuple[str, ...]:
    return tuple(c for c in path.split("/") if c)


def _ancestors(path: str) -> list[str]:
    """Proper ancestors below the root (the root itself is never moved or removed)."""
    parts = _components(path)
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


class Lease:
    """The leases one operation holds; `renew` keeps them for jobs that outlast LEASE_S.

    `owner` names the holder: a job whose steps run in several invocations passes its own, so
    each step holds, renews and releases the same leases (`held` lists the paths it holds).
    """

    def __init__(
        self,
        table: Any,
        user: str,
        owner: str | None = None,
        on_snapshot: OnSnapshot | None = None,
        lease_s: int = LEASE_S,
    ) -> None:
        self.table, self.user, self.owner = table, user, owner or uuid.uuid4().hex
        self.on_snapshot, self.lease_s = on_snapshot, lease_s
        self.held: list[str] = []

    def _item_key(self, path: str) -> dict[str, Any]:
        return {"pk": f"LOCK#{self.user}", "sk": path}

    def acquire(self, path: str, wait_s: float) -> None:
        deadline, delay = time.monotonic() + wait_s, 0.02
        passed: dict[str, str] = {}
        while not self._try_all([path], passed):
            markers = self._snapshots_above(path) if self.on_snapshot else {}
            if markers and markers != passed:
                assert self.on_snapshot is not None
                self.on_snapshot(markers, path)  # copied into them first: then past them
                passed = markers
                continue
            if time.monotonic() > deadline:
                raise ConflictError(f"{path} is busy with another operation; retry", code="busy")
            time.sleep(delay)
            delay = min(delay * 2, 0.3)
        self.held.append(path)
        self._wait_below(path, deadline)

    def _snapshots_above(self, path: str) -> dict[str, str]:
        """The snapshots being made at `path`'s ancestors: {folder: owner}, one batched read."""
        above = _ancestors(path)
        if not above:
            return {}
        now = int(time.time())
        found = batch_get(self.table, [self._item_key(a) for a in above], consistent=True)
        return {
            i["sk"]: i["owner"]
            for i in found
            if str(i["owner"]).startswith(SNAPSHOT_OWNER) and int(i["expires"]) >= now
        }

    def _try_all(self, paths: list[str], passed: Mapping[str, str] | None = None) -> bool:
        """Put every path's lease item if all are free and no ancestor is leased (but by the
        snapshots `passed`, {folder: owner}, each by that owner only): one transaction."""
        now = int(time.time())
        common = {
            "TableName": self.table.name,
            "ConditionExpression": _FREE,
            "ExpressionAttributeNames": {"#o": "owner"},
            "ExpressionAttributeValues": {":now": now, ":me": self.owner},
        }
        item = {"owner": self.owner, "expires": now + self.lease_s}
        actions = [{"Put": {**common, "Item": {**self._item_key(p), **item}}} for p in paths]
        actions += [
            {"ConditionCheck": {**common, **_past(common, passed, a), "Key": self._item_key(a)}}
            for a in _checked(paths)
        ]
        client = self.table.meta.client  # a resource's client: plain Python values, serialized for us
        try:
            client.transact_write_items(TransactItems=actions)
            return True
        except client.exceptions.TransactionCanceledException:
            return False

    def acquire_all(self, paths: list[str], wait_s: float) -> dict[str, ConflictError]:
        """Leases on many paths (a bundle's files) in a few transactions; the paths that stayed
        busy for `wait_s`, each with its error (the others are held).

        Paths are taken in component order as `path_leases` takes them, a transaction's worth
        at a time; a transaction refused (one of its paths busy) is retried path by path, waiting.
        """
        failed: dict[str, ConflictError] = {}
        for group in _transactions(sorted(set(paths), key=_components)):
            if self._try_all(group):
                self.held += group
                continue
            for path in group:
                try:
                    self.acquire(path, wait_s)
                except ConflictError as err:
                    failed[path] = err
        wanted = set(paths)
        for path in self._held_below_any(
            [p for p in self.held if p in wanted and p not in failed]
        ):  # rare: a member names a folder in use below
            try:
                self._wait_below(path, time.monotonic() + wait_s)
            except ConflictError as err:
                failed[path] = err
        return failed

    def _held_below_any(self, paths: list[str]) -> list[str]:
        """Which of `paths` have a lease of another operation below them: one query for all."""
        now, mine = int(time.time()), set(paths)
        others = [
            p
            for p in leased_paths(self.table, self.user, with_owner=True)
            if p[1] != self.owner and p[2] >= now
        ]
        return [path for path in mine if any(o.startswith(path.rstrip("/") + "/") for o, _, _ in others)]

    def _wait_below(self, path: str, deadline: float) -> None:
        delay = 0.02
        while self._held_below(path):
            if time.monotonic() > deadline:
                raise ConflictError(f"{path} is busy with another operation; retry", code="busy")
            time.sleep(delay)
            delay = min(delay * 2, 0.3)

    def _held_below(self, path: str) -> bool:
        prefix = path.rstrip("/") + "/"
        page = self.table.query(
            KeyConditionExpression=Key("pk").eq(f"LOCK#{self.user}") & Key("sk").begins_with(prefix),
            ConsistentRead=True,
        )
        now = int(time.time())
        return any(i["owner"] != self.owner and int(i["expires"]) >= now for i in page["Items"])

    def renew(self) -> None:
        """Extend every held lease by its lease_s; ConflictError if one was lost meanwhile, or had
        expired: another operation may then have changed something below it."""
        failed = self.table.meta.client.exceptions.ConditionalCheckFailedException
        for path in self.held:
            now = int(time.time())
            try:
                self.table.update_item(
                    Key={"pk": f"LOCK#{self.user}", "sk": path},
                    UpdateExpression="SET expires = :e",
                    ConditionExpression="#o = :me AND expires >= :now",
                    ExpressionAttributeNames={"#o": "owner"},
                    ExpressionAttributeValues={":e": now + self.lease_s, ":me": self.owner, ":now": now},
                )
            except failed:
                raise ConflictError(f"lost the lease on {path}", code="busy") from None

    def _release_together(self) -> None:
        """Many leases (a bundle's) given back a transaction at a time; a transaction refused
        (a lease expired and taken by another) leaves its paths to the one-by-one release."""
        client = self.table.meta.client
        kept: list[str] = []
        for start in range(0, len(self.held), MAX_TRANSACTION):
            group = self.held[start : start + MAX_TRANSACTION]
            actions = [
                {
                    "Delete": {
                        "TableName": self.table.name,
                        "Key": self._item_key(path),
                        "ConditionExpression": "#o = :o",
                        "ExpressionAttributeNames": {"#o": "owner"},
                        "ExpressionAttributeValues": {":o": self.owner},
                    }
                }
                for path in group
            ]
            try:
                client.transact_write_items(TransactItems=actions)
            except client.exceptions.TransactionCanceledException:
                kept += group
        self.held = kept

    def release(self) -> None:
        if len(self.held) > 1:
            self._release_together()
        failed = self.table.meta.client.exceptions.ConditionalCheckFailedException
        for path in reversed(self.held):
            try:
                self.table.delete_item(
                    Key={"pk": f"LOCK#{self.user}", "sk": path},
                    ConditionExpression="#o = :o",
                    ExpressionAttributeNames={"#o": "owner"},
                    ExpressionAttributeValues={":o": self.owner},
                )
            except failed:
                pass  # expired and taken by someone else: theirs now
        self.held.clear()


def _past(common: dict[str, Any], passed: Mapping[str, str] | None, ancestor: str) -> dict[str, Any]:
    """The condition on an ancestor a taker passes (a snapshot being made, by its owner only)."""
    if not passed or ancestor not in passed:
        return {}
    values = {**common["ExpressionAttributeValues"], ":snap": passed[ancestor]}
    return {"ConditionExpression": f"{_FREE} OR #o = :snap", "ExpressionAttributeValues": values}


def _checked(paths: list[str]) -> list[str]:
    """The ancestors a transaction taking `paths` checks: each once, none it also takes."""
    taking = set(paths)
    return sorted({a for p in paths for a in _ancestors(p)} - taking)


def _transactions(paths: list[str]) -> Iterator[list[str]]:
    """`paths` in order, cut into groups whose puts and checks fit one transaction."""
    group: list[str] = []
    above: set[str] = set()
    for path in paths:
        more = above | set(_ancestors(path))
        if group and len(group) + 1 + len(more - {*group, path}) > MAX_TRANSACTION:
            yield group
            group, more = [], set(_ancestors(path))
        group.append(path)
        above = more
    if group:
        yield group


def leased_paths(table: Any, user: str, with_owner: bool = False) -> list[Any]:
    """Paths under an unexpired lease now: an operation (or a job) is changing their subtrees.
    With `with_owner`: every lease item as (path, owner, expires), expired ones too."""
    now = int(time.time())
    paths: list[Any] = []  # paths, or (path, owner, expires) with `with_owner`
    kwargs: dict[str, Any] = {}
    while True:
        page = table.query(KeyConditionExpression=Key("pk").eq(f"LOCK#{user}"), ConsistentRead=True, **kwargs)
        if with_owner:
            paths += [(i["sk"], i["owner"], int(i["expires"])) for i in page["Items"]]
        else:
            paths += [i["sk"] for i in page["Items"] if int(i["expires"]) >= now]
        if "LastEvaluatedKey" not in page:
            return paths
        kwargs = {"ExclusiveStartKey": page["LastEvaluatedKey"]}


@contextmanager
def path_leases(
    table: Any, user: str, paths: list[str], wait_s: float = WAIT_S, on_snapshot: OnSnapshot | None = None
) -> Iterator[Lease]:
    lease = Lease(table, user, on_snapshot=on_snapshot)
    try:
        for path in sorted(set(paths), key=_components):
            lease.acquire(path, wait_s)
        yield lease
    finally:
        lease.release()
