"""One pass of the namespace job: every user's namespace brought in step by Merkle exchange, and
what the user's trash and version history keep (kept_copy.py), then the status. Records reach
the standby by the table's stream (record_stream.py); the pass copies them by scan only as a
backfill: on its first full pass, or when asked (`backfill`).

Runs in the primary's region with the primary's EFS mounted (functions/replicator); it reaches the
standby's table, bucket and apply function by their physical names (docs/FAILOVER.md). A paused
job (`{"action": "pause"}`) does nothing, which is how a test makes the standby stale.

A pass is resumable: it goes through users in id order, stops before its invocation's time runs
out (Budget), and the next invocation continues after the last user done, keeping the pass's
start; a namespace larger than one invocation can copy no longer makes every pass start over,
time out, and never complete.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from .kept_copy import KeptCopy
from .namespace_copy import Op, copy_namespace
from .records_copy import copy_object_record, copy_records
from .status import ReplicationStatus

CURSOR_PK = "REPL#PASS"  # where an unfinished pass left off (primary's table)
SAVE_EVERY_S = 20.0  # the cursor is saved this often too, in case the invocation is killed


@dataclass
class Standby:
    """The standby as the job reaches it."""

    table: Any
    apply: Callable[[str, list[Op]], dict[str, Any]]
    copy_object: Callable[[str], None]


def namespaces(namespaces_dir: str) -> list[str]:
    """The users with a namespace on the primary's EFS (its folders are named by user id)."""
    try:
        return sorted(e.name for e in os.scandir(namespaces_dir) if e.is_dir())
    except FileNotFoundError:
        return []


@dataclass
class Budget:
    """When a pass must stop and leave the rest to its next invocation: `stop_at` (monotonic)
    is the time after which no new user is started; at least one user is always done."""

    stop_at: float | None = None

    def spent(self) -> bool:
        return self.stop_at is not None and time.monotonic() >= self.stop_at


def _cursor_key(users: list[str] | None) -> dict[str, str]:
    """Where a pass left off: one item for full passes, one per set of users for the others."""
    if users is None:
        return {"pk": CURSOR_PK, "sk": "FULL"}
    return {"pk": CURSOR_PK, "sk": hashlib.sha256(" ".join(sorted(users)).encode()).hexdigest()[:32]}


def _load_cursor(table: Any, users: list[str] | None) -> dict[str, Any] | None:
    item = table.get_item(Key=_cursor_key(users), ConsistentRead=True).get("Item")
    return None if item is None else {k: (float(v) if isinstance(v, Decimal) else v) for k, v in item.items()}


def _save_cursor(table: Any, users: list[str] | None, progress: dict[str, Any]) -> None:
    item = {
        **_cursor_key(users),
        **{k: Decimal(repr(v)) if isinstance(v, float) else v for k, v in progress.items()},
    }
    table.put_item(Item=item)


def run_pass(
    primary_table: Any,
    namespaces_dir: str,
    standby: Standby,
    users: list[str] | None = None,
    backfill: bool = False,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """A full pass, or with `users` one over just those users' namespaces (whose status is then
    theirs alone: a user's lag, status.py). Users go in id order; when the `budget` is spent the
    pass records where it stopped (`after`, with its start time and counts so far) and the next
    invocation continues from there: a pass too long for one invocation still completes, and
    `in_step_at` is its start, whatever number of invocations it took."""
    status = ReplicationStatus(primary_table)
    if status.paused():
        return {"paused": True}
    budget = budget or Budget()
    scope = set(users) if users is not None else None
    cursor = _load_cursor(primary_table, users)
    if cursor is None:
        backfill = backfill or (scope is None and not status.read().get("backfilled_at"))
        cursor = {
            "started": time.time(),
            "after": "",
            "ops": 0,
            "failed": 0,
            "backfill": backfill,
            "records": 0,
        }
        cursor["objects"] = 0
        if backfill:
            copied = copy_records(primary_table, standby.table, standby.copy_object, scope)
            cursor["records"], cursor["objects"] = copied.written + copied.deleted, copied.objects
    resumed_after = cursor["after"]
    diverged = ReplicationStatus(standby.table).diverged()

    def before_link(content_hash: str) -> None:
        copy_object_record(primary_table, standby.table, content_hash, standby.copy_object)

    todo = [
        u
        for u in namespaces(namespaces_dir)
        if u > cursor["after"] and u not in diverged and (scope is None or u in scope)
    ]
    done_now, saved_at = 0, time.monotonic()
    for user in todo:
        if done_now and budget.spent():
            _save_cursor(primary_table, users, cursor)
            return {
                "paused": False,
                "complete": False,
                "resumed_after": resumed_after,
                "users_done": done_now,
                **cursor,
            }
        got = copy_namespace(user, namespaces_dir, primary_table, standby.table, standby.apply, before_link)
        kept = KeptCopy(user, namespaces_dir, primary_table, standby.table, standby.apply, before_link)
        kept_got = kept.run(force=bool(cursor["backfill"]))
        cursor.update(
            after=user,
            ops=cursor["ops"] + got["ops"] + kept_got["ops"],
            failed=cursor["failed"] + got["failed"] + kept_got["failed"],
        )
        done_now += 1
        if time.monotonic() - saved_at > SAVE_EVERY_S:  # an invocation cut short resumes from here
            _save_cursor(primary_table, users, cursor)
            saved_at = time.monotonic()
    primary_table.delete_item(Key=_cursor_key(users))
    started = float(cursor["started"])
    counts = {
        "copied": int(cursor["ops"]),
        "failed": int(cursor["failed"]),
        "diverged": len(diverged if scope is None else diverged & scope),
        "records": int(cursor["records"]),
        "objects": int(cursor["objects"]),
    }
    in_step = not counts["failed"]  # diverged users are the standby's own until reconciled: reported apart
    for table in (primary_table, standby.table):
        ReplicationStatus(table).record_pass(
            started, in_step, users=users, backfilled=bool(cursor["backfill"]), **counts
        )
    return {
        "paused": False,
        "complete": True,
        "in_step": in_step,
        "started": started,
        "backfill": bool(cursor["backfill"]),
        "resumed_after": resumed_after,
        "users_done": done_now,
        **counts,
    }
