"""One pass of the replication job: records, then every user's namespace, then the status.

Runs in the primary's region with the primary's EFS mounted (functions/replicator); it reaches the
standby's table, bucket and apply function by their physical names (docs/FAILOVER.md). A paused
job (`{"action": "pause"}`) does nothing, which is how a test makes the standby stale.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .namespace_copy import Op, copy_namespace
from .records_copy import copy_records
from .status import ReplicationStatus


@dataclass
class Standby:
    """The standby as the job reaches it."""

    table: Any
    apply: Callable[[str, list[Op]], dict[str, Any]]
    copy_object: Callable[[str], None]


def run_pass(
    primary_table: Any, namespaces_dir: str, standby: Standby, users: list[str] | None = None
) -> dict[str, Any]:
    """A full pass, or with `users` one over just those users' records and namespaces (whose
    status is then theirs alone: a user's lag, status.py)."""
    if ReplicationStatus(primary_table).paused():
        return {"paused": True}
    started = time.time()
    scope = set(users) if users is not None else None
    copied = copy_records(primary_table, standby.table, standby.copy_object, scope)
    diverged = ReplicationStatus(standby.table).diverged()
    ops = failed = 0
    for user in copied.users:
        if user not in diverged and (scope is None or user in scope):
            got = copy_namespace(user, namespaces_dir, primary_table, standby.table, standby.apply)
            ops, failed = ops + got["ops"], failed + got["failed"]
    counts = {
        "copied": ops,
        "failed": failed,
        "diverged": len(diverged & set(copied.users)),
        "records": copied.written + copied.deleted,
        "objects": copied.objects,
    }
    in_step = not failed  # diverged users are the standby's own until reconciled: reported apart
    for table in (primary_table, standby.table):
        ReplicationStatus(table).record_pass(started, in_step, users=users, **counts)
    return {"paused": False, "in_step": in_step, "started": started, **counts}
