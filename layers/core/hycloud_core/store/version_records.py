"""Earlier versions of a user's files: one record per overwritten or deleted version.

| record | pk | sk | attributes |
| --- | --- | --- | --- |
| earlier version of a file | `VER#<user>` | `<path>//<version id>` | path, version, kind (small/large), content_hash, sha256, size, mtime, by, at, reason (overwrite/delete), expires, erasure |

A normalized path never holds `//`, so `begins_with(sk, "<path>//")` finds one path's versions and
no other's. The version id starts with the time it was kept in milliseconds, zero-padded, so a
path's versions sort oldest first and a backward query reads them newest first. `expires` is
when upkeep may drop the record (fs/version_upkeep.py); until then the content it names is kept:
a large version's S3 object by the collector (store/collector.py marks every `VER#` record's
content hash), a small version's bytes in the user's versions area on EFS (fs/version_copies.py).

The shape is shared: the API answers `VersionRecord.to_dict()` and the client reads it back and
checks version ids with `checked_version_id`, so this module loads no AWS library until a record
is read or written (the CLI starts without boto3).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from . import time_ids

if TYPE_CHECKING:
    from boto3.dynamodb.conditions import ConditionBase

PREFIX = "VER#"
SEPARATOR = "//"
ID_PATTERN = time_ids.ID_PATTERN
REASONS = ("overwrite", "delete")


def new_version_id(now: float) -> str:
    """Time-ordered (milliseconds) with a random tail, so two versions kept in one millisecond differ."""
    return time_ids.new_id(now)


def checked_version_id(value: object) -> str:
    """A version id as a client gave it, or a 400: it becomes part of a DynamoDB key."""
    return time_ids.checked_id(value, "version must look like 1764400000000-0a1b2c3d", "bad-version-id")


@dataclass(frozen=True)
class VersionRecord:
    """One earlier version of `path`: what it held, who replaced or deleted it and when."""

    path: str
    version: str
    kind: str  # "small" (bytes in the versions area) | "large" (an S3 object)
    content_hash: str
    size: int
    mtime: float  # the version's own modification time
    by: str  # the user id whose write replaced or deleted it
    at: float  # when it stopped being current
    reason: str  # "overwrite" | "delete"
    expires: float  # kept until then
    sha256: str | None = None
    erasure: dict[str, Any] | None = None  # a coded version's layout (its blocks are its content)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, item: dict[str, Any]) -> VersionRecord:
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in item.items() if k in known})


def _sk(path: str, version: str) -> str:
    return f"{path}{SEPARATOR}{version}"


class VersionRecords:
    """The `VER#<user>` partition: one user's earlier versions."""

    def __init__(self, table: Any, user: str) -> None:
        self.table, self.user = table, user
        self.pk = f"{PREFIX}{user}"

    def put(self, record: VersionRecord) -> None:
        item = {"pk": self.pk, "sk": _sk(record.path, record.version), **record.to_dict()}
        self.table.put_item(Item=_numbers(item))

    def get(self, path: str, version: str) -> VersionRecord | None:
        from .records import _plain

        item = self.table.get_item(Key={"pk": self.pk, "sk": _sk(path, version)}, ConsistentRead=True)
        return VersionRecord.from_dict(_plain(item["Item"])) if "Item" in item else None

    def _query(self, begins: str | None = None) -> list[dict[str, Any]]:
        from boto3.dynamodb.conditions import Key

        from .records import query_all

        cond: ConditionBase = Key("pk").eq(self.pk)
        if begins is not None:
            cond = cond & Key("sk").begins_with(begins)
        return query_all(self.table, cond, True)

    def of_path(self, path: str, now: float | None = None) -> list[VersionRecord]:
        """The path's versions still kept at `now`, newest first."""
        now = time.time() if now is None else now
        records = [VersionRecord.from_dict(i) for i in reversed(self._query(path + SEPARATOR))]
        return [r for r in records if r.expires > now]

    def all(self) -> list[VersionRecord]:
        """Every record of the user, expired ones included (what upkeep goes through)."""
        return [VersionRecord.from_dict(i) for i in self._query()]

    def delete(self, records: list[VersionRecord]) -> None:
        with self.table.batch_writer() as batch:
            for record in records:
                batch.delete_item(Key={"pk": self.pk, "sk": _sk(record.path, record.version)})


def _numbers(item: dict[str, Any]) -> dict[str, Any]:
    """DynamoDB takes no floats: times as Decimal via their text."""
    return {k: Decimal(str(v)) if isinstance(v, float) else v for k, v in item.items()}
