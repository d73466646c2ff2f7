"""Usage figures read from the DynamoDB table rather than from EFS.

`reference_counts` is a handful of batched reads per request. `deployment_usage` scans the whole
table, which reads (and bills) every item: it is for an operator's occasional report, not for
the request path.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from boto3.dynamodb.conditions import Attr

from ..store.records import _plain
from . import metering as m

BATCH_GET_LIMIT = 100


def reference_counts(table: Any, hashes: Iterable[str]) -> dict[str, int]:
    """Deployment-wide reference count of each live content among `hashes`."""
    wanted = sorted(set(hashes))
    client = table.meta.client
    counts: dict[str, int] = {}
    for i in range(0, len(wanted), BATCH_GET_LIMIT):
        keys = [{"pk": f"OBJ#{h}", "sk": "OBJ"} for h in wanted[i : i + BATCH_GET_LIMIT]]
        request = {table.name: {"Keys": keys, "ProjectionExpression": "pk, refs"}}
        while request:
            page = client.batch_get_item(RequestItems=request)
            for item in page["Responses"].get(table.name, []):
                counts[item["pk"].removeprefix("OBJ#")] = int(item["refs"])
            request = page.get("UnprocessedKeys") or None
    return counts


@dataclass
class UserTotals:
    small_files: int = 0
    small_bytes: int = 0
    efs_metered_bytes: int = 0  # small files and link files; directories are not in the table
    large_files: int = 0
    large_bytes: int = 0
    contents: set[str] = field(default_factory=set)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["distinct_contents"] = len(out.pop("contents"))
        return out


@dataclass
class DeploymentUsage:
    """S3 as billed once for everyone (from `OBJ#` records) and per-user file totals (`NS#`)."""

    s3_objects: int = 0
    s3_bytes: int = 0  # each content once: what the bucket holds
    s3_logical_bytes: int = 0  # size × references: what the users see
    references: int = 0
    users: dict[str, UserTotals] = field(default_factory=dict)

    @property
    def efs_metered_bytes(self) -> int:
        return sum(u.efs_metered_bytes for u in self.users.values())

    def add(self, item: dict) -> None:
        pk = item["pk"]
        if pk.startswith("OBJ#") and item.get("state") == "live":
            refs = int(item.get("refs", 0))
            self.s3_objects += 1
            self.s3_bytes += int(item["size"])
            self.s3_logical_bytes += int(item["size"]) * refs
            self.references += refs
        elif pk.startswith("NS#") and item["sk"].startswith("F#"):
            totals = self.users.setdefault(pk.removeprefix("NS#"), UserTotals())
            size = int(item.get("size", 0))
            if item.get("kind") == "large":
                totals.large_files += 1
                totals.large_bytes += size
                totals.contents.add(item.get("content_hash", ""))
                totals.efs_metered_bytes += m.efs_file_bytes(m.LINK_FILE_BYTES_ESTIMATE)
            else:
                totals.small_files += 1
                totals.small_bytes += size
                totals.efs_metered_bytes += m.efs_file_bytes(size)

    def to_dict(self) -> dict:
        return {
            "s3_objects": self.s3_objects,
            "s3_bytes": self.s3_bytes,
            "s3_logical_bytes": self.s3_logical_bytes,
            "references": self.references,
            "dedup_saved_bytes": self.s3_logical_bytes - self.s3_bytes,
            "efs_metered_bytes": self.efs_metered_bytes,
            "users": {name: totals.to_dict() for name, totals in sorted(self.users.items())},
        }


def deployment_usage(table: Any) -> DeploymentUsage:
    """Scan the table once for object and file records."""
    usage = DeploymentUsage()
    kwargs: dict[str, Any] = {
        "FilterExpression": Attr("pk").begins_with("OBJ#") | Attr("pk").begins_with("NS#")
    }
    while True:
        page = table.scan(**kwargs)
        for item in page["Items"]:
            usage.add(_plain(item))
        if "LastEvaluatedKey" not in page:
            return usage
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
