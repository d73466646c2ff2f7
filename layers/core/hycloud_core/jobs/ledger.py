"""The job ledger: which execution serves a job, so a job runs once and every retry runs anew.

One small record per job, `pk = JOB#<user>`, `sk = <job key>`, with the current `attempt`,
`fresh_until` (how long a finished result may be handed out again) and, for an attempt run by a
state machine other than the caller's default (a data instance's, docs/GEO.md), its `machine`. The attempt counter must
not restart while a closed execution's name cannot be reused (90 days on AWS), so a record
expires (the table's TTL attribute) only `KEEP_S` after its last attempt.
Because records sit in the user's partition, finding one is also the ownership check.

A request for a job is served by the current attempt while it runs, or after it succeeded while
its result is fresh and still there; a failed attempt, or a result gone or stale, makes the next
request start attempt + 1. The counter moves by a conditional write, so concurrent requests
agree on one new execution.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import HyCloudError
from .names import execution_name

RESULT_FRESH_S = 6 * 3600  # well inside upkeep's 24 h for staging files
KEEP_S = 91 * 86400  # a closed execution's name is reusable after 90 days


@dataclass(frozen=True)
class JobRecord:
    key: str
    attempt: int
    fresh_until: float
    machine: str | None = None  # the state machine of this attempt when not the default one

    @property
    def execution(self) -> str:
        return execution_name(self.key, self.attempt)


class JobLedger:
    def __init__(self, table: Any, user: str) -> None:
        self.table, self.pk = table, f"JOB#{user}"

    def get(self, key: str) -> JobRecord | None:
        item = self.table.get_item(Key={"pk": self.pk, "sk": key}, ConsistentRead=True).get("Item")
        if not item:
            return None
        return JobRecord(key, int(item["attempt"]), float(item["fresh_until"]), item.get("machine"))

    def advance(
        self, key: str, seen: JobRecord | None, fresh_s: float = RESULT_FRESH_S, machine: str | None = None
    ) -> JobRecord | None:
        """Record the next attempt after `seen` (run by `machine`, when not the default one); None
        when another request moved it first."""
        new = JobRecord(key, (seen.attempt if seen else 0) + 1, time.time() + fresh_s, machine)
        condition: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(pk)"}
        if seen:
            condition = {
                "ConditionExpression": "attempt = :seen",
                "ExpressionAttributeValues": {":seen": seen.attempt},
            }
        item = {
            "pk": self.pk,
            "sk": key,
            "attempt": new.attempt,
            "fresh_until": int(new.fresh_until),
            "expiration": int(time.time() + KEEP_S),
            **({"machine": machine} if machine else {}),
        }
        try:
            self.table.put_item(Item=item, **condition)
        except self.table.meta.client.exceptions.ConditionalCheckFailedException:
            return None
        return new


def serves(record: JobRecord, status: str, result_alive: Callable[[str], bool]) -> bool:
    """Whether the record's execution answers a new request (status: RUNNING, SUCCEEDED, ABSENT, ...)."""
    if status in ("RUNNING", "ABSENT"):  # ABSENT: started by a request still on its way
        return True
    return status == "SUCCEEDED" and record.fresh_until > time.time() and result_alive(record.execution)


def submit(
    ledger: JobLedger,
    key: str,
    status: Callable[[JobRecord], str],
    result_alive: Callable[[str], bool],
    launch: Callable[[JobRecord], None],
    machine: str | None = None,
) -> JobRecord:
    """The attempt serving job `key`, launching a new one (run by `machine`, when not the default
    one) when the current one does not serve. A running or finished attempt is served where it
    ran; one recorded but not started yet is started by this request only on this request's machine
    (the input is made for it), else a new attempt starts here.

    `result_alive(name)` says whether a succeeded execution's result is still there;
    `launch(record)` must be idempotent (a concurrent request may launch the same attempt).
    """
    for _ in range(8):
        record = ledger.get(key)
        if record is not None:
            state = status(record)
            elsewhere = state == "ABSENT" and record.machine != machine  # this request's input is not its
            if serves(record, state, result_alive) and not elsewhere:
                if state == "ABSENT":
                    launch(record)
                return record
        record = ledger.advance(key, record, machine=machine)
        if record is not None:
            launch(record)
            return record
    raise HyCloudError("the job is changing under concurrent requests; retry", code="busy", status=503)
