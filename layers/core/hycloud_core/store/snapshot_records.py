"""What a user's snapshots are: one record per snapshot of a folder (fs/snapshots.py).

| record | pk | sk | attributes |
| --- | --- | --- | --- |
| a snapshot | `SNAP#<user>` | `S#<name>` | name, id (its folder on EFS), path (the folder), at, by, files, bytes, state |

Keyed by the name the user gave, so a second snapshot of that name is refused by one
conditional put; `id` is a time id (store/time_ids.py) naming its folder in the snapshot area.
`state` is "making" while `create` copies the tree and "ready" once the copy is whole: a crash
in between leaves a "making" record that `rm` removes with its folder. `files` and `bytes` are
what the snapshot holds: its line of the listing's totals, which the quota check at `create` adds.

The shape is shared: the API answers `Snapshot.to_dict()` and the client checks names with
`checked_name`, so this module loads no AWS library until a record is read or written.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import Any

from ..errors import ConflictError, checked_match

PREFIX = "SNAP#"
SNAP = "S#"
MAKING, READY = "making", "ready"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
_NAME = re.compile(NAME_PATTERN)


def checked_name(value: object) -> str:
    """A snapshot's name as a client gave it, or a 400: it becomes part of a DynamoDB key."""
    return checked_match(
        value,
        _NAME,
        "a snapshot name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
        "bad-snapshot-name",
    )


def default_name(now: float) -> str:
    """The name of a snapshot made without one: when it was made, to the second (UTC)."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))


@dataclass(frozen=True)
class Snapshot:
    """A read-only copy of the folder `path` as it was at `at`."""

    name: str
    id: str  # its folder in the user's snapshot area
    path: str  # the folder it copies
    at: float
    by: str  # the user id that made it
    files: int = 0
    bytes: int = 0
    state: str = MAKING

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, item: dict[str, Any]) -> Snapshot:
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in item.items() if k in known})


class SnapshotRecords:
    """The `SNAP#<user>` partition."""

    def __init__(self, table: Any, user: str) -> None:
        self.table, self.user = table, user
        self.pk = f"{PREFIX}{user}"

    def _item(self, snap: Snapshot) -> dict[str, Any]:
        record = {"pk": self.pk, "sk": SNAP + snap.name, **snap.to_dict()}
        return {k: Decimal(str(v)) if isinstance(v, float) else v for k, v in record.items()}

    def claim(self, snap: Snapshot) -> None:
        """Write a new snapshot's record; 409 when one of that name exists."""
        try:
            self.table.put_item(Item=self._item(snap), ConditionExpression="attribute_not_exists(sk)")
        except self.table.meta.client.exceptions.ConditionalCheckFailedException:
            raise ConflictError(
                f"a snapshot named {snap.name} exists; choose another name", code="already-exists"
            ) from None

    def put(self, snap: Snapshot) -> None:
        self.table.put_item(Item=self._item(snap))

    def get(self, name: str) -> Snapshot | None:
        from .records import _plain

        found = self.table.get_item(Key={"pk": self.pk, "sk": SNAP + name}, ConsistentRead=True)
        return Snapshot.from_dict(_plain(found["Item"])) if "Item" in found else None

    def all(self) -> list[Snapshot]:
        """Every snapshot, by name."""
        from boto3.dynamodb.conditions import Key

        from .records import query_all

        cond = Key("pk").eq(self.pk) & Key("sk").begins_with(SNAP)
        return [Snapshot.from_dict(i) for i in query_all(self.table, cond, True)]

    def delete(self, name: str) -> None:
        self.table.delete_item(Key={"pk": self.pk, "sk": SNAP + name})

    def totals(self) -> dict[str, int]:
        """Bytes and files the snapshots hold: what they add to the user's use at `create`."""
        snaps = self.all()
        return {
            "bytes": sum(s.bytes for s in snaps),
            "files": sum(s.files for s in snaps),
            "snapshots": len(snaps),
        }
