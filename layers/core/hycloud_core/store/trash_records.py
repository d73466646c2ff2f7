"""What a user's trash holds: one record per removed file or tree, and the user's own retention.

| record | pk | sk | attributes |
| --- | --- | --- | --- |
| an item in the trash | `TRASH#<user>` | `I#<item id>` | item, path (where it was), type (file/dir), size, files, at, by |
| the user's own trash retention | `TRASH#<user>` | `SETTINGS` | retention_s |

The item id starts with the time it was trashed in milliseconds (as version ids do), so the
partition reads oldest first and upkeep can tell an item's age from its name on EFS alone, even
when a crash left the item without a record (fs/trash.py). `size` and `files` are what the item
held when it was trashed: the trash's line of the usage report adds them up.

The shape is shared: the API answers `TrashItem.to_dict()` and the client checks item ids with
`checked_item_id`, so this module loads no AWS library until a record is read or written.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import Any

from ..errors import BadRequestError
from . import time_ids

PREFIX = "TRASH#"
ITEM = "I#"
SETTINGS = "SETTINGS"
ID_PATTERN = time_ids.ID_PATTERN


def new_item_id(now: float) -> str:
    """Time-ordered (milliseconds) with a random tail, so two items trashed in one millisecond differ."""
    return time_ids.new_id(now)


def checked_item_id(value: object) -> str:
    """An item id as a client gave it, or a 400: it names a folder on EFS and a DynamoDB key."""
    return time_ids.checked_id(value, "a trash item looks like 1764400000000-0a1b2c3d", "bad-trash-item")


def trashed_at(item_id: str) -> float:
    """When the item went to the trash, read from its id (seconds)."""
    return time_ids.made_at(item_id)


@dataclass(frozen=True)
class TrashItem:
    """A file or a folder tree removed from `path`, kept until the retention ends."""

    item: str
    path: str
    type: str  # "file" | "dir"
    size: int  # bytes it held
    files: int  # files it held
    at: float  # when it was trashed
    by: str  # the user id that removed it
    pending: bool = False  # a folder whose size and files are still to be counted (0 until then)
    emptying: bool = False  # emptied: no longer listed; what it holds is being removed

    def to_dict(self) -> dict[str, Any]:
        """What the API shows of a listed item (an emptying one is never listed)."""
        out = asdict(self)
        del out["emptying"]
        return out

    @classmethod
    def from_dict(cls, item: dict[str, Any]) -> TrashItem:
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in item.items() if k in known})


class TrashRecords:
    """The `TRASH#<user>` partition."""

    def __init__(self, table: Any, user: str) -> None:
        self.table, self.user = table, user
        self.pk = f"{PREFIX}{user}"

    def put(self, item: TrashItem) -> None:
        record = {"pk": self.pk, "sk": ITEM + item.item, **item.to_dict()}
        self.table.put_item(
            Item={k: Decimal(str(v)) if isinstance(v, float) else v for k, v in record.items()}
        )

    def get(self, item_id: str) -> TrashItem | None:
        from .records import _plain

        found = self.table.get_item(Key={"pk": self.pk, "sk": ITEM + item_id}, ConsistentRead=True)
        return TrashItem.from_dict(_plain(found["Item"])) if "Item" in found else None

    def all(self) -> list[TrashItem]:
        """Every item, oldest first."""
        from boto3.dynamodb.conditions import Key

        from .records import query_all

        cond = Key("pk").eq(self.pk) & Key("sk").begins_with(ITEM)
        return [TrashItem.from_dict(i) for i in query_all(self.table, cond, True)]

    def settle(self, item_id: str, size: int, files: int) -> bool:
        """Give a pending item its size and files, once: False when it was settled (or gone) already."""
        try:
            self.table.update_item(
                Key={"pk": self.pk, "sk": ITEM + item_id},
                UpdateExpression="SET #s = :s, #f = :f, #p = :no",
                ConditionExpression="#p = :yes",
                ExpressionAttributeNames={"#s": "size", "#f": "files", "#p": "pending"},
                ExpressionAttributeValues={":s": size, ":f": files, ":no": False, ":yes": True},
            )
        except self.table.meta.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def mark_emptying(self, item_id: str) -> bool:
        """The item was emptied (fs/trash.py); False when it has no record."""
        try:
            self.table.update_item(
                Key={"pk": self.pk, "sk": ITEM + item_id},
                UpdateExpression="SET emptying = :yes",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeValues={":yes": True},
            )
        except self.table.meta.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def delete(self, item_id: str) -> None:
        self.table.delete_item(Key={"pk": self.pk, "sk": ITEM + item_id})

    def totals(self) -> dict[str, int]:
        """Bytes and files in the trash (not of emptied items): the usage report's own line for it."""
        items = [i for i in self.all() if not i.emptying]
        return {
            "bytes": sum(i.size for i in items),
            "files": sum(i.files for i in items),
            "items": len(items),
        }

    # --- the user's own retention --------------------------------------------------------------
    def retention(self, default_s: int) -> int:
        """How long this user's trash keeps an item: its own setting, else the deployment's."""
        found = self.table.get_item(Key={"pk": self.pk, "sk": SETTINGS}, ConsistentRead=True).get("Item")
        return int(found["retention_s"]) if found and "retention_s" in found else default_s

    def set_retention(self, seconds: int | None) -> None:
        """The user's own retention in seconds (0: purged at the next upkeep); None: the deployment's."""
        if seconds is None:
            self.table.delete_item(Key={"pk": self.pk, "sk": SETTINGS})
            return
        if seconds < 0:
            raise BadRequestError("a trash retention is 0 seconds or more", code="bad-retention")
        self.table.put_item(Item={"pk": self.pk, "sk": SETTINGS, "retention_s": int(seconds)})
