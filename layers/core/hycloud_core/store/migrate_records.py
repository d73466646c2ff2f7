"""Upkeep's migration of file records keyed by path (`F#<path>`) to records keyed by folder id.

Deployments before the directory index (dir_index.py) keyed a file's record by its whole path.
This round converts them, a bounded page per invocation, user by user, resumable from a cursor
item (`MIGRATE#RECORDS` / `CURSOR`: the user in progress); a converted record leaves the old key,
so a page cut short is simply found again. When a namespace has no old record left, its `LAYOUT`
item says so and its reads stop looking for old keys.

While a namespace is being migrated the app works on both layouts (records.py): writes go to the
new key and delete the old one in one transaction; reads look at the old key first, then the new;
listings merge both. Each conversion holds the lease of the record's folder (for files at the root,
the file's own), so no write, move or removal of it interleaves: under it the old record is read
again and, if still there, put at its new key and deleted in one transaction.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from boto3.dynamodb.conditions import Key

from .. import paths
from ..errors import ConflictError
from .locks import passing, path_leases
from .old_layout import OLD_PREFIX, old_file_key
from .records import Records

CURSOR = {"pk": "MIGRATE#RECORDS", "sk": "CURSOR"}


@dataclass
class Migration:
    """What one round did: records converted, users finished, and whether every user is done."""

    records: int = 0
    users_done: list[str] = field(default_factory=list)
    busy: list[str] = field(default_factory=list)
    complete: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"records": self.records, "users_done": len(self.users_done), "complete": self.complete}


def convert_page(records: Records, user: str, limit: int) -> tuple[int, bool]:
    """Convert up to `limit` of the user's old records; (how many, whether none is left)."""
    table = records.table
    page = table.query(
        KeyConditionExpression=Key("pk").eq(f"NS#{user}") & Key("sk").begins_with(OLD_PREFIX),
        Limit=max(1, limit),
        ConsistentRead=True,
    )
    found = [str(i["sk"])[2:] for i in page["Items"]]
    if not found:
        records.dirs.mark_migrated(user)
        return 0, True
    converted = 0
    for folder, group in groupby(found, key=paths.parent):
        files = list(group)
        with path_leases(table, user, files if folder == "/" else [folder], on_snapshot=passing):
            r = records.dirs.resolver(user)
            converted += sum(_convert(records, user, path, r) for path in files)
    return converted, False


def _convert(records: Records, user: str, path: str, r: Any) -> int:
    """Move one old record to its new key, if it is still there (under its folder's lease)."""
    table, old = records.table, old_file_key(user, path)
    item = table.get_item(Key=old, ConsistentRead=True).get("Item")
    if item is None:
        return 0
    new = records.file_key(user, path, create=True, r=r) or {}
    table.meta.client.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": table.name, "Item": {**item, **new}}},
            {
                "Delete": {
                    "TableName": table.name,
                    "Key": old,
                    "ConditionExpression": "attribute_exists(sk)",
                }
            },
        ]
    )
    return 1


def migrate(records: Records, users: list[str], limit: int = 2000, budget_s: float = 60.0) -> Migration:
    """One bounded round over `users` (sorted), from the cursor's user: at most `limit` records
    and about `budget_s` seconds. A user whose folders are busy is left for the next round."""
    table, out = records.table, Migration()
    if not users:  # a data instance's upkeep: no namespace here, and no access to the home table
        out.complete = True
        return out
    deadline, left = time.monotonic() + budget_s, limit
    cursor = (table.get_item(Key=CURSOR, ConsistentRead=True).get("Item") or {}).get("user", "")
    todo = [u for u in sorted(users) if u >= cursor]
    for user in todo:
        table.put_item(Item={**CURSOR, "user": user})
        done = records.dirs.migrated(user)
        while not done and left > 0 and time.monotonic() < deadline:
            try:
                n, done = convert_page(records, user, min(left, 100))
            except ConflictError:  # a folder busy for longer than a lease wait: next round
                out.busy.append(user)
                break
            out.records, left = out.records + n, left - max(n, 1)
        if not done:
            if user in out.busy:
                continue
            return out  # out of budget: the cursor names this user
        out.users_done.append(user)
    table.put_item(Item={**CURSOR, "user": ""})  # next round starts again (new users, busy ones)
    out.complete = not out.busy
    return out


_WARM: dict[str, Records] = {}  # per table, while the function is warm: migrated namespaces known


def upkeep_round(
    table_name: str, namespaces_dir: str, options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Upkeep's page of the migration, over every namespace on EFS (or an event's "users"), within
    its "limit" (records) and "budget_s" (seconds)."""
    o = options or {}
    records = _WARM.setdefault(table_name, Records(table_name))
    users = o.get("users")
    if users is None:
        found = os.listdir(namespaces_dir) if os.path.isdir(namespaces_dir) else []
        users = [u for u in found if os.path.isdir(os.path.join(namespaces_dir, u))]
    done = migrate(records, [str(u) for u in users], int(o.get("limit", 1000)), float(o.get("budget_s", 15)))
    return {"records_migrated": done.to_dict()}
