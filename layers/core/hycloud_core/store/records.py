"""The single DynamoDB table and its key design.

One table keeps every record so that a user's whole state is one partition query and the
deployment has one thing to back up and replicate to a standby region:

| record | pk | sk | attributes |
| --- | --- | --- | --- |
| user, API key, user id | `USER#<name>`, `KEY#<key id>`, `USERID#<id>` | see users.py | |
| file in a namespace | `NS#<user>` | `F#<path>` | kind (small/large), size, sha256, mtime |
| Merkle node of a namespace | `MK#<user>` | `/` (root), `<parent>//<name>` | path, kind (file/dir/tombstone), hash, digest, gen, mtime, expiration (TTL, tombstones, 30 days) (merkle_records.py) |
| large-file object | `OBJ#<content hash>` | `OBJ` | state, size, s3_key, touched, gen, keep_until, links (objects.py) |
| earlier version of a file | `VER#<user>` | `<path>//<version id>` | kind, content_hash, sha256, size, mtime, by, at, reason, expires (version_records.py) |
| trash item, the user's trash retention | `TRASH#<user>` | `I#<item id>`, `SETTINGS` | path, type, size, files, at, by; retention_s (trash_records.py) |
| pending upload | `UPLOAD#<user>` | `<content hash>` | upload_id, size, part digests, or a dedup challenge |
| subtree lease | `LOCK#<user>` | `<path>` | owner, expires (see locks.py) |
| share link, a user's share links | `SHARE#<token>`, `SHARES#<user>` | `SHARE`, `S#<token>` / `SERVED` | see shares.py |
| collector state | `GC#STATE` | `TREE` | epoch: bumped by folder moves (see collector.py) |
| job ledger | `JOB#<user>` | `<job key>` | attempt, fresh_until, expiration (TTL, 91 days: jobs/ledger.py) |
| answer to an Idempotency-Key | `IDEM` | `controller#<sha256 of user, key, method, route>` | status, expiration (TTL), data, validation (the controller's idempotency.py) |

`<user>` in `NS#`, `MK#`, `VER#`, `TRASH#`, `UPLOAD#` and `LOCK#` is the user's internal id, never reused (users.py).
A file's records sort under `F#<path>`, so a directory's subtree is the exact key plus the
prefix `F#<path>/`: moves, copies and deletes of directories rewrite that range.
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import boto3
from boto3.dynamodb.conditions import ConditionBase, Key
from botocore.exceptions import ClientError


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    """DynamoDB returns Decimal; callers want int/float."""
    out = {}
    for k, v in item.items():
        if isinstance(v, Decimal):
            out[k] = int(v) if v == int(v) else float(v)
        else:
            out[k] = v
    return out


def query_all(table: Any, cond: Any, consistent: bool = False) -> list[dict[str, Any]]:
    """Every item a key condition matches, page after page, as plain values."""
    items, kwargs = [], {"KeyConditionExpression": cond, "ConsistentRead": consistent}
    while True:
        page = table.query(**kwargs)
        items += [_plain(i) for i in page["Items"]]
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


class Records:
    def __init__(self, table_name: str, resource: Any | None = None) -> None:
        self.table = (resource or boto3.resource("dynamodb")).Table(table_name)

    # files
    def put_file(self, user: str, path: str, **attrs: Any) -> None:
        self.table.put_item(Item={"pk": f"NS#{user}", "sk": f"F#{path}", "mtime": int(time.time()), **attrs})

    def get_file(self, user: str, path: str) -> dict[str, Any] | None:
        item = self.table.get_item(Key={"pk": f"NS#{user}", "sk": f"F#{path}"}).get("Item")
        return _plain(item) if item else None

    def delete_file(self, user: str, path: str) -> None:
        self.table.delete_item(Key={"pk": f"NS#{user}", "sk": f"F#{path}"})

    def _query(self, cond: ConditionBase) -> list[dict[str, Any]]:
        return query_all(self.table, cond)

    def files_under(self, user: str, path: str) -> list[dict[str, Any]]:
        """Records of `path` itself and of everything below it."""
        pk = Key("pk").eq(f"NS#{user}")
        own = self.get_file(user, path)
        below = self._query(pk & Key("sk").begins_with(f"F#{path.rstrip('/')}/"))
        return ([own] if own else []) + below

    def rewrite_subtree(self, user: str, src: str, dst: str | None, keep_src: bool = False) -> None:
        """Move (or copy, with keep_src) the records under src to dst; dst None deletes them."""
        items = self.files_under(user, src)
        with self.table.batch_writer() as batch:
            for item in items:
                if dst is not None:
                    new_path = (
                        dst + item["sk"][2 + len(src.rstrip("/")) :] if src != "/" else dst + item["sk"][2:]
                    )
                    batch.put_item(Item={**item, "sk": f"F#{new_path}"})
                if not keep_src:
                    batch.delete_item(Key={"pk": item["pk"], "sk": item["sk"]})

    def put_files(self, user: str, files: dict[str, dict[str, Any]]) -> None:
        """Records of many files ({path: attributes}) in batches: a tree job's page of copies."""
        now = int(time.time())
        with self.table.batch_writer() as batch:
            for path, attrs in files.items():
                batch.put_item(Item={"pk": f"NS#{user}", "sk": f"F#{path}", "mtime": now, **attrs})

    def delete_files(self, user: str, paths: list[str]) -> None:
        with self.table.batch_writer() as batch:
            for path in paths:
                batch.delete_item(Key={"pk": f"NS#{user}", "sk": f"F#{path}"})

    def move_page(self, user: str, src: str, dst: str, limit: int) -> int:
        """Move up to `limit` records from below the folder `src` to below `dst`; how many moved.

        The moved ones leave `src`, so calling it again continues where it stopped.
        """
        prefix = f"F#{src.rstrip('/')}/"
        page = self.table.query(
            KeyConditionExpression=Key("pk").eq(f"NS#{user}") & Key("sk").begins_with(prefix),
            Limit=limit,
            ConsistentRead=True,
        )
        items = [_plain(i) for i in page["Items"]]
        with self.table.batch_writer() as batch:
            for item in items:
                batch.put_item(Item={**item, "sk": f"F#{dst.rstrip('/')}/{item['sk'][len(prefix) :]}"})
                batch.delete_item(Key={"pk": item["pk"], "sk": item["sk"]})
        return len(items)

    # pending uploads
    def get_upload(self, user: str, content_hash: str) -> dict[str, Any] | None:
        item = self.table.get_item(Key={"pk": f"UPLOAD#{user}", "sk": content_hash}, ConsistentRead=True).get(
            "Item"
        )
        return _plain(item) if item else None

    def put_upload(self, user: str, content_hash: str, **attrs: Any) -> None:
        self.table.put_item(
            Item={"pk": f"UPLOAD#{user}", "sk": content_hash, "created": int(time.time()), **attrs}
        )

    def update_upload(self, user: str, content_hash: str, expected: dict[str, Any], **attrs: Any) -> bool:
        """Set `attrs` on an upload whose fields still hold `expected`; False when one does not."""
        names = {f"#s{i}": k for i, k in enumerate(attrs)} | {f"#e{i}": k for i, k in enumerate(expected)}
        values = {f":s{i}": v for i, v in enumerate(attrs.values())}
        values |= {f":e{i}": v for i, v in enumerate(expected.values())}
        try:
            self.table.update_item(
                Key={"pk": f"UPLOAD#{user}", "sk": content_hash},
                UpdateExpression="SET " + ", ".join(f"#s{i} = :s{i}" for i in range(len(attrs))),
                ConditionExpression=" AND ".join(f"#e{i} = :e{i}" for i in range(len(expected))),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except ClientError as err:
            if err.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def delete_upload(self, user: str, content_hash: str) -> None:
        self.table.delete_item(Key={"pk": f"UPLOAD#{user}", "sk": content_hash})
