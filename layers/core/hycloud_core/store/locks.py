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
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from boto3.dynamodb.conditions import Key

from ..errors import ConflictError

LEASE_S = 60
WAIT_S = 10.0
_FREE = "attribute_not_exists(pk) OR expires < :now OR #o = :me"


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

    def __init__(self, table: Any, user: str, owner: str | None = None) -> None:
        self.table, self.user, self.owner, self.held = table, user, owner or uuid.uuid4().hex, []

    def _item_key(self, path: str) -> dict:
        return {"pk": f"LOCK#{self.user}", "sk": path}

    def acquire(self, path: str, wait_s: float) -> None:
        deadline, delay = time.monotonic() + wait_s, 0.02
        while not self._try(path):
            if time.monotonic() > deadline:
                raise ConflictError(f"{path} is busy with another operation; retry", code="busy")
            time.sleep(delay)
            delay = min(delay * 2, 0.3)
        self.held.append(path)
        while self._held_below(path):
            if time.monotonic() > deadline:
                raise ConflictError(f"{path} is busy with another operation; retry", code="busy")
            time.sleep(delay)
            delay = min(delay * 2, 0.3)

    def _try(self, path: str) -> bool:
        now = int(time.time())
        common = {
            "TableName": self.table.name,
            "ConditionExpression": _FREE,
            "ExpressionAttributeNames": {"#o": "owner"},
            "ExpressionAttributeValues": {":now": now, ":me": self.owner},
        }
        item = {**self._item_key(path), "owner": self.owner, "expires": now + LEASE_S}
        actions = [{"Put": {**common, "Item": item}}]
        actions += [{"ConditionCheck": {**common, "Key": self._item_key(a)}} for a in _ancestors(path)]
        client = self.table.meta.client  # a resource's client: plain Python values, serialized for us
        try:
            client.transact_write_items(TransactItems=actions)
            return True
        except client.exceptions.TransactionCanceledException:
            return False

    def _held_below(self, path: str) -> bool:
        prefix = path.rstrip("/") + "/"
        page = self.table.query(
            KeyConditionExpression=Key("pk").eq(f"LOCK#{self.user}") & Key("sk").begins_with(prefix),
            ConsistentRead=True,
        )
        now = int(time.time())
        return any(i["owner"] != self.owner and int(i["expires"]) >= now for i in page["Items"])

    def renew(self) -> None:
        """Extend every held lease by LEASE_S; ConflictError if one was lost meanwhile, or had
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
                    ExpressionAttributeValues={":e": now + LEASE_S, ":me": self.owner, ":now": now},
                )
            except failed:
                raise ConflictError(f"lost the lease on {path}", code="busy") from None

    def release(self) -> None:
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


def leased_paths(table: Any, user: str) -> list[str]:
    """Paths under an unexpired lease now: an operation (or a job) is changing their subtrees."""
    now, paths, kwargs = int(time.time()), [], {}
    while True:
        page = table.query(KeyConditionExpression=Key("pk").eq(f"LOCK#{user}"), ConsistentRead=True, **kwargs)
        paths += [i["sk"] for i in page["Items"] if int(i["expires"]) >= now]
        if "LastEvaluatedKey" not in page:
            return paths
        kwargs = {"ExclusiveStartKey": page["LastEvaluatedKey"]}


@contextmanager
def path_leases(table: Any, user: str, paths: list[str], wait_s: float = WAIT_S) -> Iterator[Lease]:
    lease = Lease(table, user)
    try:
        for path in sorted(set(paths), key=_components):
            lease.acquire(path, wait_s)
        yield lease
    finally:
        lease.release()
