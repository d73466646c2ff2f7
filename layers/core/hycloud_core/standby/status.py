"""How far behind the primary the standby is, and which users wrote to the standby directly.

Items (records.py's table; the replication job writes the status into both tables):

    pk = "REPL#STANDBY", sk = "STATUS"     in_step_at, last_pass_at, pass_s, copied, removed,
                                            diverged (users skipped), paused
    pk = "REPL#STANDBY", sk = "USER#<user>" in_step_at of the last pass over that user alone
    pk = "REPL#DIVERGED", sk = "<user>"    since: a user wrote to the standby while the primary
                                            was unreachable (standby's table only)

`in_step_at` is the start of the last pass that left every namespace and record of the standby
equal to the primary's, so every change acknowledged before it is on the standby: the lag is
`now - in_step_at`. Diverged users are left out of it (and counted in `diverged`). A diverged user's namespace is not replicated (its writes on the standby would
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
        self, started: float, in_step: bool, users: list[str] | None = None, **counts: int
    ) -> None:
        """A pass that began at `started` ended; `in_step`: nothing was left out or failed.
        A pass over some `users` only moves those users' own `in_step_at`."""
        if users is not None:
            for user in users if in_step else []:
                self.table.put_item(Item={**_user_key(user), "in_step_at": _num(started)})
            return
        sets = [f"#{k} = :{k}" for k in counts] + ["last_pass_at = :started", "pass_s = :took"]
        if in_step:
            sets.append("in_step_at = :started")
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
        return {
            "role": role,
            "in_step_at": in_step,
            "lag_s": None if in_step is None else round(max(0.0, now - float(in_step)), 3),
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


ENV_ROLE = "HYCLOUD_ROLE"  # "standby" on the standby's controller; unset on the primary's


def role() -> str:
    return os.environ.get(ENV_ROLE) or "primary"
