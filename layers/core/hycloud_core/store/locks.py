"""Path leases in DynamoDB: operations on the same path run one at a time.

Every mutating operation takes a lease on each path it changes (source and destination of a
move) before touching EFS or reference counts, in sorted order so two operations never wait on
each other. A lease expires on its own, so a crashed function cannot block a path for longer
than LEASE_S. This is the stop-and-wait ordering of related operations (seed 000 §III-C) made
safe across concurrent controller invocations.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import ConflictError

LEASE_S = 60
WAIT_S = 10.0


@contextmanager
def path_leases(table, user: str, paths: list[str], wait_s: float = WAIT_S) -> Iterator[None]:
    owner = uuid.uuid4().hex
    held: list[str] = []
    try:
        for path in sorted(set(paths)):
            _acquire(table, user, path, owner, wait_s)
            held.append(path)
        yield
    finally:
        for path in held:
            _release(table, user, path, owner)


def _key(user: str, path: str) -> dict:
    return {"pk": f"LOCK#{user}", "sk": path}


def _acquire(table, user: str, path: str, owner: str, wait_s: float) -> None:
    deadline, delay = time.monotonic() + wait_s, 0.02
    failed = table.meta.client.exceptions.ConditionalCheckFailedException
    while True:
        now = int(time.time())
        try:
            table.put_item(
                Item={**_key(user, path), "owner": owner, "expires": now + LEASE_S},
                ConditionExpression="attribute_not_exists(pk) OR expires < :now",
                ExpressionAttributeValues={":now": now},
            )
            return
        except failed:
            if time.monotonic() > deadline:
                raise ConflictError(f"{path} is busy with another operation; retry", code="busy") from None
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


def _release(table, user: str, path: str, owner: str) -> None:
    try:
        table.delete_item(
            Key=_key(user, path),
            ConditionExpression="#o = :o",
            ExpressionAttributeNames={"#o": "owner"},
            ExpressionAttributeValues={":o": owner},
        )
    except table.meta.client.exceptions.ConditionalCheckFailedException:
        pass  # expired and taken by someone else: theirs now
