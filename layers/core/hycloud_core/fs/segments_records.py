"""The DynamoDB record of each segment (docs/SEGMENTS.md): its state and its live share.

One item per segment, `SEG#<user>` / `<segment id>`: total bytes, live bytes (what stubs on EFS
still name, recounted by every cleaner pass from the namespace, the source of truth), its state
(`packing` while its stubs are being written, `sealed`, `retired` once its live members were
copied into a newer segment), and `touched`, the last time a stub naming it was copied or moved
(fs/operations.py): a cleaner pass that began before that may have missed the stub, so it
deletes nothing of that segment.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from boto3.dynamodb.conditions import Key

from ..store.old_layout import old_file_key
from ..store.records import Records, _plain, query_all
from .segments_format import Stub

PACKING, SEALED, RETIRED = "packing", "sealed", "retired"


def _key(user: str, segment_id: str) -> dict[str, str]:
    return {"pk": f"SEG#{user}", "sk": segment_id}


@dataclass(frozen=True)
class SegmentRecord:
    user: str
    id: str
    key: str
    state: str
    total_bytes: int
    live_bytes: int
    created: float
    retired_at: float = 0.0
    touched: float = 0.0

    @property
    def live_share(self) -> float:
        return self.live_bytes / self.total_bytes if self.total_bytes else 0.0

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> SegmentRecord:
        item = _plain(item)
        return cls(
            user=item["pk"].removeprefix("SEG#"),
            id=item["sk"],
            key=item["key"],
            state=item["state"],
            total_bytes=int(item["total_bytes"]),
            live_bytes=int(item["live_bytes"]),
            created=float(item["created"]),
            retired_at=float(item.get("retired_at", 0)),
            touched=float(item.get("touched", 0)),
        )


# A packed file's record carries its segment and offset: `GET /v1/usage?source=records` counts it as
# packed from the records alone (cost/records.py). Any later write of the file replaces its record
# whole, dropping the mark; a move or copy carries it with the record, as the stub goes with the name.
RECORD_SEGMENT, RECORD_OFFSET = "segment", "segment_offset"


def mark_packed(table: Any, user: str, path: str, segment_id: str, offset: int) -> None:
    """Mark the file record of `path` (called under its lease, its stub just written) as packed;
    a missing record is not made here (the reconciler makes it, marked, from the stub)."""
    records = Records.over(table)
    key = records.file_key(user, path)
    if not records.dirs.migrated(user) and records.table.get_item(Key=old_file_key(user, path)).get("Item"):
        key = old_file_key(user, path)
    if key is None:
        return
    try:
        table.update_item(
            Key=key,
            UpdateExpression="SET #s = :s, #o = :o",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeNames={"#s": RECORD_SEGMENT, "#o": RECORD_OFFSET},
            ExpressionAttributeValues={":s": segment_id, ":o": offset},
        )
    except table.meta.client.exceptions.ConditionalCheckFailedException:
        pass


def packed_marks(stub: Stub) -> dict[str, Any]:
    """The attributes a packed file's record carries (the reconciler's expectation)."""
    return {RECORD_SEGMENT: stub.segment, RECORD_OFFSET: stub.offset}


def touch_segment(table: Any, user: str, segment_id: str) -> None:
    """Say a stub naming the segment was just copied or moved (the cleaner's walk may miss it)."""
    client = table.meta.client
    try:
        table.update_item(
            Key=_key(user, segment_id),
            UpdateExpression="SET touched = :now",
            ExpressionAttributeValues={":now": int(time.time()) + 1},  # whole seconds, rounded up
            ConditionExpression="attribute_exists(pk)",
        )
    except client.exceptions.ConditionalCheckFailedException:
        pass  # no such segment: the stub names nothing a cleaner could delete


class SegmentRecords:
    def __init__(self, table: Any, user: str) -> None:
        self.table, self.user = table, user

    def create(self, segment_id: str, key: str, total_bytes: int, members: int) -> None:
        self.table.put_item(
            Item={
                **_key(self.user, segment_id),
                "key": key,
                "state": PACKING,
                "total_bytes": total_bytes,
                "live_bytes": 0,
                "members": members,
                "created": int(time.time()),
            },
            ConditionExpression="attribute_not_exists(pk)",
        )

    def get(self, segment_id: str) -> SegmentRecord | None:
        item = self.table.get_item(Key=_key(self.user, segment_id), ConsistentRead=True).get("Item")
        return SegmentRecord.from_item(item) if item else None

    def all(self) -> list[SegmentRecord]:
        items = query_all(self.table, Key("pk").eq(f"SEG#{self.user}"), consistent=True)
        return [SegmentRecord.from_item(i) for i in items]

    def set_live(self, segment_id: str, live_bytes: int, state: str | None = None) -> None:
        """Record the live bytes a pass counted (and a new state: sealed after packing)."""
        names = {"#l": "live_bytes", **({"#s": "state"} if state else {})}
        values: dict[str, Any] = {":l": live_bytes, **({":s": state} if state else {})}
        update = "SET #l = :l" + (", #s = :s" if state else "")
        self.table.update_item(
            Key=_key(self.user, segment_id),
            UpdateExpression=update,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ConditionExpression="attribute_exists(pk)",
        )

    def retire(self, segment_id: str, now: float) -> None:
        self.table.update_item(
            Key=_key(self.user, segment_id),
            UpdateExpression="SET #s = :s, retired_at = :t, live_bytes = :z",
            ExpressionAttributeNames={"#s": "state"},
            ExpressionAttributeValues={":s": RETIRED, ":t": int(now), ":z": 0},
        )

    def delete(self, segment_id: str) -> None:
        self.table.delete_item(Key=_key(self.user, segment_id))
