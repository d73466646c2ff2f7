"""Usage figures read from the DynamoDB table rather than from EFS.

`reference_counts` is a handful of batched reads per request, and `user_usage_from_records` one
query of the user's partition (fast where walking a large namespace on EFS is slow). `deployment_usage` scans the whole
table, which reads (and bills) every item: it is for an operator's occasional report, not for
the request path.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from boto3.dynamodb.conditions import Attr

from ..fs.segments_format import Stub
from ..fs.segments_records import RECORD_OFFSET, RECORD_SEGMENT, SegmentRecords
from ..store.pages import batch_get
from ..store.records import Records, _plain
from . import metering as m
from .model import compare
from .prices import Prices
from .usage import Usage, UsageBuilder


def reference_counts(table: Any, hashes: Iterable[str]) -> dict[str, int]:
    """How many file records name each live content among `hashes` (counted by the collector)."""
    keys = [{"pk": f"OBJ#{h}", "sk": "OBJ"} for h in sorted(set(hashes))]
    found = batch_get(table, keys, projection="pk, links")
    return {item["pk"].removeprefix("OBJ#"): int(item.get("links", 0)) for item in found}


@dataclass
class ObjectTotals:
    """The bucket as billed: each content once, whoever references it (`OBJ#` records)."""

    s3_objects: int = 0
    s3_bytes: int = 0
    s3_logical_bytes: int = 0  # size x references: what the users see
    references: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "dedup_saved_bytes": self.s3_logical_bytes - self.s3_bytes}


@dataclass
class DeploymentUsage:
    """Object totals plus usage rebuilt from file records, for everyone and per user.

    File records carry sizes and content hashes but not directories, so `efs_dirs` is zero here
    and EFS is understated by 6 KiB per directory; link files are metered at their usual 6 KiB.
    """

    objects: ObjectTotals = field(default_factory=ObjectTotals)
    everyone: UsageBuilder = field(default_factory=UsageBuilder)
    users: dict[str, UsageBuilder] = field(default_factory=dict)  # by internal user id
    names: dict[str, str] = field(default_factory=dict)  # internal id -> name of a live user
    _sizes: dict[str, int] = field(default_factory=dict)

    def add(self, item: dict[str, Any]) -> None:
        pk = item["pk"]
        if pk.startswith("USERID#") and item.get("state") == "active":
            self.names[pk.removeprefix("USERID#")] = item["name"]
        elif pk.startswith("OBJ#") and item.get("state") == "live":
            self.objects.s3_objects += 1
            self.objects.s3_bytes += int(item["size"])
            self._sizes[pk.removeprefix("OBJ#")] = int(item["size"])
        elif pk.startswith("NS#") and item["sk"].startswith("F#"):
            # keyed by path or by folder id and name (store/dir_index.py): the key sizes the record;
            # records of trashed folders are stored until purged, so they are counted here
            name, path = pk.removeprefix("NS#"), item["sk"].removeprefix("F#")
            user = self.users.setdefault(name, UsageBuilder(user=name))
            for builder in (user, self.everyone):
                _add_record(builder, item, path, name)

    def count_references(self) -> None:
        """References are the file records naming each stored content (objects carry no count)."""
        refs = self.everyone.refs
        self.objects.references = sum(refs[h] for h in self._sizes)
        self.objects.s3_logical_bytes = sum(size * refs[h] for h, size in self._sizes.items())

    def report(self, prices: Prices) -> dict[str, Any]:
        self.count_references()

        def priced(usage: Usage) -> dict[str, Any]:
            costs = compare(usage, prices)
            return {"usage": usage.to_dict(), "costs": {k: c.to_dict(prices) for k, c in costs.items()}}

        return {
            "objects": self.objects.to_dict(),
            "all_users": priced(self.everyone.build()),
            "users": {self.names.get(uid, uid): priced(b.build()) for uid, b in sorted(self.users.items())},
            "prices": {"region": prices.region, "date": prices.date},
        }


def _add_record(builder: UsageBuilder, item: dict[str, Any], path: str, user: str) -> None:
    """A file record as a small file, a packed one or a link file; its record and stub bytes are
    estimated as the walk does."""
    size = int(item.get("size", 0))
    if RECORD_SEGMENT in item:  # packed into a segment (marked by the pack: fs/segments_records.py)
        stub = Stub(
            str(item[RECORD_SEGMENT]), "", int(item[RECORD_OFFSET]), size, "", str(item.get("sha256", ""))
        )
        builder.add_packed(stub, m.STUB_BYTES_ESTIMATE, path, user)
    elif item.get("kind") == "large":
        builder.add_large(size, item.get("content_hash", ""), m.LINK_FILE_BYTES_ESTIMATE, path, user)
    else:
        builder.add_small(size, path, user)


def user_usage_from_records(records: Records, user: str) -> tuple[Usage, UsageBuilder]:
    """A user's usage from their file records: one query, no EFS walk, directories not counted."""
    builder = UsageBuilder(user=user)
    for item in records.files_under(user, "/"):
        _add_record(builder, item, item["sk"].removeprefix("F#"), user)  # the key sizes the record
    return builder.build(), builder


def with_segment_records(usage: Usage, table: Any, user: str) -> Usage:
    """The usage with its segments as S3 stores them: every object of the user's `SEG#` records
    (one query), its dead members (rewritten or deleted files, until the cleaner compacts it) and
    retired objects (kept for the grace period) included. A walk sees only the live members."""
    found = SegmentRecords(table, user).all()
    if not found and not usage.segment_files:
        return usage
    return replace(usage, segment_objects=len(found), segment_stored_bytes=sum(r.total_bytes for r in found))


def deployment_usage(table: Any) -> DeploymentUsage:
    """Scan the table once for object, file and user-id records."""
    usage = DeploymentUsage()
    wanted = (
        Attr("pk").begins_with("OBJ#") | Attr("pk").begins_with("NS#") | Attr("pk").begins_with("USERID#")
    )
    kwargs: dict[str, Any] = {"FilterExpression": wanted}
    while True:
        page = table.scan(**kwargs)
        for item in page["Items"]:
            usage.add(_plain(item))
        if "LastEvaluatedKey" not in page:
            usage.count_references()
            return usage
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
