"""One pass of the namespace job: every user's namespace brought in step by Merkle exchange, then
the status. Records reach the standby by the table's stream (record_stream.py); the pass copies
them by scan only as a backfill: on its first full pass, or when asked (`backfill`).

Runs in the primary's region with the primary's EFS mounted (functions/replicator); it reaches the
standby's table, bucket and apply function by their physical names (docs/FAILOVER.md). A paused
job (`{"action": "pause"}`) does nothing, which is how a test makes the standby stale.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .namespace_copy import Op, copy_namespace
from .records_copy import Copied, copy_object_record, copy_records
from .status import ReplicationStatus


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


def run_pass(
    primary_table: Any,
    namespaces_dir: str,
    standby: Standby,
    users: list[str] | None = None,
    backfill: bool = False,
) -> dict[str, Any]:
    """A full pass, or with `users` one over just those users' namespaces (whose status is then
    theirs alone: a user's lag, status.py)."""
    status = ReplicationStatus(primary_table)
    if status.paused():
        return {"paused": True}
    started = time.time()
    scope = set(users) if users is not None else None
    backfill = backfill or (scope is None and not status.read().get("backfilled_at"))
    copied = copy_records(primary_table, standby.table, standby.copy_object, scope) if backfill else Copied()
    diverged = ReplicationStatus(standby.table).diverged()
    ops = failed = 0

    def before_link(content_hash: str) -> None:
        copy_object_record(primary_table, standby.table, content_hash, standby.copy_object)

    for user in namespaces(namespaces_dir):
        if user not in diverged and (scope is None or user in scope):
            got = copy_namespace(
                user, namespaces_dir, primary_table, standby.table, standby.apply, before_link
            )
            ops, failed = ops + got["ops"], failed + got["failed"]
    counts = {
        "copied": ops,
        "failed": failed,
        "diverged": len(diverged if scope is None else diverged & scope),
        "records": copied.written + copied.deleted,
        "objects": copied.objects,
    }
    in_step = not failed  # diverged users are the standby's own until reconciled: reported apart
    for table in (primary_table, standby.table):
        ReplicationStatus(table).record_pass(started, in_step, users=users, backfilled=backfill, **counts)
    return {"paused": False, "in_step": in_step, "started": started, "backfill": backfill, **counts}
