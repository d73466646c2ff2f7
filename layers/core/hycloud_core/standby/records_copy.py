"""Users, keys, large-file objects and usage counters copied from the primary's table (and bucket)
into the standby's by scan: the backfill path (the first pass, or when asked); the table's stream
carries every later change (record_stream.py).

One scan of each table, restricted to these record kinds: the standby writes its own namespace
records (file index, Merkle nodes) as it applies files, so those are never copied. An item is
written only when it differs; one the primary no longer has is deleted (a revoked key, a deleted
user). An object's content is copied before its record, so a standby record always names content
the standby's bucket holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from boto3.dynamodb.conditions import Attr, ConditionBase
from botocore.exceptions import ClientError

from ..store.pages import scan_items

COPIED = ("USER#", "KEY#", "USERID#", "OBJ#", "USAGE#")


class ContentGone(Exception):
    """The primary's bucket no longer holds an object's content (reclaimed since its record)."""


@dataclass
class Copied:
    written: int = 0
    deleted: int = 0
    objects: int = 0
    users: tuple[str, ...] = ()


def _scan(table: Any) -> Iterator[dict[str, Any]]:
    cond: ConditionBase = Attr("pk").begins_with(COPIED[0])
    for prefix in COPIED[1:]:
        cond = cond | Attr("pk").begins_with(prefix)
    return scan_items(table, FilterExpression=cond, ConsistentRead=True)


def _key(item: dict[str, Any]) -> tuple[str, str]:
    return item["pk"], item["sk"]


def of_users(items: list[dict[str, Any]], users: set[str]) -> Callable[[dict[str, Any]], bool]:
    """The records of these users (by internal id): their id, profile, key and usage records."""
    names = {item["name"] for item in items if item["pk"] in {f"USERID#{u}" for u in users}}
    pks = {f"USERID#{u}" for u in users} | {f"USER#{n}" for n in names} | {f"USAGE#{u}" for u in users}
    return lambda item: item["pk"] in pks or (item["pk"].startswith("KEY#") and item.get("user") in names)


def copy_records(source: Any, target: Any, copy_object: Any, users: set[str] | None = None) -> Copied:
    """Make the target's user, key and object records equal to the source's (with `users`, only
    those users' records, and no objects). `copy_object(s3_key)` puts one object's content into
    the standby's bucket."""
    found = list(_scan(source))
    keep = of_users(found, users) if users is not None else (lambda item: True)
    theirs = {_key(item): item for item in _scan(target) if keep(item)}
    ours = {_key(item): item for item in found if keep(item)}
    done = Copied(users=tuple(sorted(pk[len("USERID#") :] for pk, _ in ours if pk.startswith("USERID#"))))
    with target.batch_writer() as batch:
        for key, item in ours.items():
            if theirs.get(key) == item:
                continue
            if key[0].startswith("OBJ#") and item.get("s3_key") and item.get("state") != "deleting":
                copy_object(item["s3_key"])
                done.objects += 1
            batch.put_item(Item=item)
            done.written += 1
        for key in theirs.keys() - ours.keys():
            batch.delete_item(Key={"pk": key[0], "sk": key[1]})
            done.deleted += 1
    return done


def copy_object_record(source: Any, target: Any, content_hash: str, copy_object: Any) -> bool:
    """Put one object's content and record on the standby unless it has them (before a link
    naming it lands there, whatever the stream's lag); True when something was copied."""
    key = {"pk": f"OBJ#{content_hash}", "sk": "OBJ"}
    item = source.get_item(Key=key, ConsistentRead=True).get("Item")
    if not item or target.get_item(Key=key, ConsistentRead=True).get("Item"):
        return False
    if item.get("s3_key"):
        copy_object(item["s3_key"])
    target.put_item(Item=item)
    return True


def _exists(s3: Any, bucket: str, key: str) -> bool:
    try:
        s3.head_object(Bucket=bucket, Key=key)
        return True
    except ClientError as err:
        if err.response["Error"]["Code"] not in ("404", "NoSuchKey", "NotFound"):
            raise
        return False


def object_copier(
    s3_source: Any, source_bucket: str, s3_target: Any, target_bucket: str
) -> Callable[[str], None]:
    """copy_object for copy_records: a managed (multipart when large) copy, skipped when present;
    ContentGone when the primary's bucket no longer has it."""

    def copy(key: str) -> None:
        if _exists(s3_target, target_bucket, key):
            return  # content keys are immutable: present means equal
        if not _exists(s3_source, source_bucket, key):
            raise ContentGone(key)
        s3_target.copy({"Bucket": source_bucket, "Key": key}, target_bucket, key, SourceClient=s3_source)

    return copy
