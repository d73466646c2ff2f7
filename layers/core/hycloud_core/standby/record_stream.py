"""Users, keys, user ids, objects and usage counters carried from the primary's table into the
standby's by the table's DynamoDB stream (docs/FAILOVER.md).

The stream (NEW_AND_OLD_IMAGES) feeds the home region's stream replicator function through an
event source mapping filtered to these record kinds (`STREAMED`), so the namespace's own churn
(file index, Merkle nodes, leases) never invokes it. A batch is applied in stream order, record by
record: a put for INSERT/MODIFY (an object's content copied to the standby's bucket first), a
delete for REMOVE. Access records (keys, users, user ids: `ACCESS`) go first, in stream order,
then the others (objects, usage), in stream order: each item's changes stay in order, and a
revoked key or a disabled user is not held behind a large object's content copy or a failing
object record in the same batch. On the first failure the batch stops and the sequence number of
the earliest record not applied is reported (`batchItemFailures`), so Lambda retries from there
(records after it that were applied are applied again, in order: puts and deletes of whole
images) and no later change of a key lands before an earlier one. An object whose content the
primary no longer holds (reclaimed since) is skipped, not retried: its record could never land,
and retrying it would hold every later record of its shard for a day. A diverged user's usage counter is the standby's own (its writes there
count in it), so the primary's is not copied over it until the user has reconciled.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from .records_copy import ContentGone

STREAMED = ("USER#", "KEY#", "USERID#", "OBJ#", "USAGE#")
ACCESS = ("KEY#", "USER#", "USERID#")  # who may act: applied first in each batch
STREAM_STATUS = {"pk": "REPL#STANDBY", "sk": "STREAM"}
_plain = TypeDeserializer()


def stream_filter() -> dict[str, Any]:
    """The event source mapping's filter pattern: only records whose pk has a streamed prefix."""
    return {"dynamodb": {"Keys": {"pk": {"S": [{"prefix": p} for p in STREAMED]}}}}


def _image(image: dict[str, Any]) -> dict[str, Any]:
    return {k: _plain.deserialize(v) for k, v in image.items()}


@dataclass
class Applied:
    written: int = 0
    deleted: int = 0
    objects: int = 0
    skipped: int = 0
    oldest_at: float | None = None  # the earliest change time in the batch
    failed_at: str | None = None  # sequence number of the first record not applied
    errors: list[str] = field(default_factory=list)


def _skip(item_pk: str, diverged: set[str]) -> bool:
    return item_pk.startswith("USAGE#") and item_pk[len("USAGE#") :] in diverged


def apply_record(
    record: dict[str, Any], target: Any, copy_object: Callable[[str], None], done: Applied
) -> None:
    """One stream record on the standby's table (content first for an object)."""
    change = record["dynamodb"]
    key = _image(change["Keys"])
    if record["eventName"] == "REMOVE":
        target.delete_item(Key=key)
        done.deleted += 1
        return
    item = _image(change["NewImage"])
    if key["pk"].startswith("OBJ#") and item.get("s3_key") and item.get("state") != "deleting":
        try:
            copy_object(item["s3_key"])
        except ContentGone:
            done.skipped += 1  # reclaimed on the primary since: a record naming nothing is not sent
            return
        done.objects += 1
    target.put_item(Item=item)
    done.written += 1


def _access_first(records: list[dict[str, Any]]) -> list[int]:
    """Positions in the order to apply: access records, then the rest, each in stream order."""
    first = [i for i, r in enumerate(records) if _image(r["dynamodb"]["Keys"])["pk"].startswith(ACCESS)]
    chosen = set(first)
    return first + [i for i in range(len(records)) if i not in chosen]


def apply_batch(
    records: list[dict[str, Any]],
    target: Any,
    copy_object: Callable[[str], None],
    diverged: set[str],
) -> Applied:
    """A batch, access records first; stops at the first failure (Applied.failed_at: the
    earliest record in stream order not applied)."""
    done = Applied()
    for record in records:
        created = float(record["dynamodb"].get("ApproximateCreationDateTime", time.time()))
        done.oldest_at = created if done.oldest_at is None else min(done.oldest_at, created)
    applied: set[int] = set()
    for i in _access_first(records):
        change = records[i]["dynamodb"]
        if _skip(_image(change["Keys"])["pk"], diverged):
            done.skipped += 1
        else:
            try:
                apply_record(records[i], target, copy_object, done)
            except Exception as err:  # retried from the earliest record not applied
                done.errors.append(f"{type(err).__name__}: {err}")
                break
        applied.add(i)
    missing = next((i for i in range(len(records)) if i not in applied), None)
    if done.errors and missing is not None:
        done.failed_at = records[missing]["dynamodb"]["SequenceNumber"]
    return done


def record_batch(tables: list[Any], done: Applied, now: float | None = None) -> None:
    """The stream's lag as of this batch, in each table (GET /v1/replication reads it):
    `lag_s` is how long the batch's oldest change took to reach the standby."""
    now = time.time() if now is None else now
    lag = max(0.0, now - done.oldest_at) if done.oldest_at is not None else 0.0
    for table in tables:
        table.update_item(
            Key=STREAM_STATUS,
            UpdateExpression="SET applied_at = :now, lag_s = :lag, ok = :ok ADD applied :n",
            ExpressionAttributeValues={
                ":now": Decimal(repr(round(now, 3))),
                ":lag": Decimal(repr(round(lag, 3))),
                ":ok": done.failed_at is None,
                ":n": done.written + done.deleted,
            },
        )
