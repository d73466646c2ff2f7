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
agree on one new execution. The ledger only decides: `submit` says which attempt serves and
whether this request starts it, and the caller stages the job's input and launches it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import TryLaterError
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

    @property
    def fresh(self) -> bool:
        """Whether a finished result may still be handed out (its age, not whether it is there)."""
        return self.fresh_until > time.time()


@dataclass(frozen=True)
class Attempt:
    """The attempt serving a job, and whether the request that asked starts it (a new attempt,
    or one recorded for this request's machine but not started yet; starting is idempotent)."""

    record: JobRecord
    start: bool

    @property
    def execution(self) -> str:
        return self.record.execution


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


def serves(record: JobRecord, status: str) -> bool:
    """Whether the record's execution answers a new request. `status` is what the caller sees of
    it: RUNNING, ABSENT (started by a request still on its way), SUCCEEDED (its result still
    there) or anything else (failed, timed out, its result gone)."""
    if status in ("RUNNING", "ABSENT"):
        return True
    return status == "SUCCEEDED" and record.fresh


def submit(
    ledger: JobLedger, key: str, status: Callable[[JobRecord], str], machine: str | None = None
) -> Attempt:
    """The attempt serving job `key`, a new one (run by `machine`, when not the default one)
    when the current one does not serve (`status`, as for `serves`, looks the current one up).
    A running or finished attempt is served where it ran; one recorded but not started yet is
    started by this request only on this request's machine (the input is made for it), else a
    new attempt starts here. Nothing is launched: the caller starts the attempt when told to."""
    for _ in range(8):
        record = ledger.get(key)
        if record is not None:
            state = status(record)
            elsewhere = state == "ABSENT" and record.machine != machine  # this request's input is not its
            if serves(record, state) and not elsewhere:
                return Attempt(record, start=state == "ABSENT")
        record = ledger.advance(key, record, machine=machine)
        if record is not None:
            return Attempt(record, start=True)
    raise TryLaterError("the job is changing under concurrent requests; retry")
