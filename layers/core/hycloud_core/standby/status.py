"""How far behind the primary the standby is, and which users wrote to the standby directly.

Items (records.py's table; the replication job writes the status into both tables):

    pk = "REPL#STANDBY", sk = "STATUS"     in_step_at, last_pass_at, pass_s, copied, removed,
                                            diverged (users skipped), paused
    pk = "REPL#STANDBY", sk = "USER#<user>" in_step_at of the last pass over that user alone
    pk = "REPL#STANDBY", sk = "STREAM"     applied_at, lag_s, ok of the record stream's last batch
    pk = "REPL#DIVERGED", sk = "<user>"    since: a user wrote to the standby while the primary
                                            was unreachable (standby's table only)

`in_step_at` is the start of the last pass that left every namespace of the standby equal to the
primary's, so every namespace change acknowledged before it is on the standby: the namespace lag
is `now - in_step_at`. Records (users, keys, objects, usage) follow by the table's stream, whose
lag is that of its last batch (record_stream.py). Diverged users are left out of it (and counted in `diverged`). A diverged user's namespace is not replicated (its writes on the standby would
be overwritten) until its client has reconciled the primary and cleared the mark.
"""

from __future__ import annotations

import os
import time
from decimal import Decimal
from typing import Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from ..store.records import _plain, query_all
from .record_stream import STREAM_STATUS

STATUS = {"pk": "REPL#STANDBY", "sk": "STATUS"}
DIVERGED = "REPL#DIVERGED"


def _user_key(user: str) -> dict[str, str]:
    return {"pk": STATUS["pk"], "sk": f"USER#{user}"}


def _num(value: float) -> Decimal:
    return Decimal(repr(round(float(value), 3)))


class ReplicationStatus:
    def __init__(self, table: Any) -> None:
        self.table = table

    def read(self) -> dict[str, Any]:
        item = self.table.get_item(Key=STATUS, ConsistentRead=True).get("Item")
        return _plain(dict(item)) if item else {}

    def paused(self) -> bool:
        return bool(self.read().get("paused"))

    def set_paused(self, paused: bool) -> None:
        self.table.update_item(
            Key=STATUS, UpdateExpression="SET paused = :p", ExpressionAttributeValues={":p": paused}
        )

    def record_pass(
        self,
        started: float,
        in_step: bool,
        users: list[str] | None = None,
        backfilled: bool = False,
        **counts: int,
    ) -> None:
        """A pass that began at `started` ended; `in_step`: nothing was left out or failed.
        A pass over some `users` only moves those users' own `in_step_at`; a full one that copied
        every record by scan (`backfilled`) is not repeated (record_stream.py carries the rest)."""
        if users is not None:
            for user in users if in_step else []:
                self.table.put_item(Item={**_user_key(user), "in_step_at": _num(started)})
            return
        sets = [f"#{k} = :{k}" for k in counts] + ["last_pass_at = :started", "pass_s = :took"]
        if in_step:
            sets.append("in_step_at = :started")
        if in_step and backfilled:
            sets.append("backfilled_at = :started")
        names = {"ExpressionAttributeNames": {f"#{k}": k for k in counts}} if counts else {}
        self.table.update_item(
            Key=STATUS,
            UpdateExpression="SET " + ", ".join(sets),
            ExpressionAttributeValues={
                **{f":{k}": v for k, v in counts.items()},
                ":started": _num(started),
                ":took": _num(time.time() - started),
            },
            **names,
        )

    def report(self, role: str, now: float | None = None, user: str | None = None) -> dict[str, Any]:
        """What `GET /v1/replication` answers: the lag (for `user`, the later of the last full pass
        and the last pass over that user), or None before the first complete pass."""
        now = time.time() if now is None else now
        item = self.read()
        mine = self.table.get_item(Key=_user_key(user), ConsistentRead=True).get("Item") if user else None
        passes = [float(x["in_step_at"]) for x in (item, mine or {}) if x.get("in_step_at") is not None]
        in_step = max(passes) if passes else None
        lag = None if in_step is None else round(max(0.0, now - float(in_step)), 3)
        return {
            "role": role,
            "in_step_at": in_step,
            "lag_s": lag,
            "namespace_lag_s": lag,
            **stream_lag(self.table),
            "last_pass_at": item.get("last_pass_at"),
            "paused": bool(item.get("paused")),
            "diverged_users": int(item.get("diverged", 0)),
        }

    # --- users who wrote to the standby -------------------------------------------------------
    def mark_diverged(self, user: str, when: float | None = None) -> None:
        try:
            self.table.put_item(
                Item={"pk": DIVERGED, "sk": user, "since": _num(time.time() if when is None else when)},
                ConditionExpression="attribute_not_exists(pk)",
            )
        except ClientError as err:
            if err.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise

    def clear_diverged(self, user: str) -> None:
        self.table.delete_item(Key={"pk": DIVERGED, "sk": user})

    def diverged(self) -> set[str]:
        return {item["sk"] for item in query_all(self.table, Key("pk").eq(DIVERGED), consistent=True)}

    def is_diverged(self, user: str) -> bool:
        return "Item" in self.table.get_item(Key={"pk": DIVERGED, "sk": user}, ConsistentRead=True)


def stream_lag(table: Any) -> dict[str, Any]:
    """The record stream's lag as of its last batch (record_stream.py): how long that batch's
    oldest change took to reach the standby, when it was applied, and whether it all landed."""
    item = table.get_item(Key=STREAM_STATUS, ConsistentRead=True).get("Item") or {}
    return {
        "records_lag_s": float(item["lag_s"]) if "lag_s" in item else None,
        "records_applied_at": float(item["applied_at"]) if "applied_at" in item else None,
        "records_ok": bool(item.get("ok", True)),
    }


ENV_ROLE = "HYCLOUD_ROLE"  # "standby" on the standby's controller; unset on the primary's


def role() -> str:
    return os.environ.get(ENV_ROLE) or "primary"
