"""The small-file threshold in force: chosen by the upkeep from the measured mix, kept in the table.

Records `THRESHOLD` / `DEPLOYMENT` and `THRESHOLD` / `U#<user>`: threshold, at, reason, inputs (the
mix's summary) and choice (the candidates' bills, the move cost). The threshold in force for a
user is, in order:

1. "configured": the deployment's `hycloud:smallFileThreshold` when the operator fixed it
   (`hycloud:smallFileThresholdFixed`: true): the operator's value always wins, nothing is chosen;
2. "user": the user's own choice, where their mix pays for one (cost/threshold_choice.py);
3. "deployment": the deployment's choice;
4. "default": `hycloud:smallFileThreshold`, until the upkeep has measured enough to choose.

The upkeep (`choose_all`) prices the mix of every user together for the deployment, then each
user's own against it, and returns each user's threshold for the moves that follow
(fs/threshold_moves.py). Files are read through `Records.files_under`, the meter through
cost/access_meter.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from boto3.dynamodb.conditions import Key

from ..store.records import Records, query_all
from . import access_meter
from .prices import Prices
from .threshold_choice import Choice, Guard, Mix, choose, choose_for_user, clamp

PK = "THRESHOLD"
DEPLOYMENT = "DEPLOYMENT"
SOURCES = ("configured", "user", "deployment", "default")
USER_BUDGET_S = 60.0  # users' own choices per round: the upkeep has other rounds within its 300 s


def _sk(user: str | None) -> str:
    return DEPLOYMENT if user is None else f"U#{user}"


@dataclass(frozen=True)
class InForce:
    threshold: int
    source: str  # one of SOURCES
    reason: str
    at: int | None = None
    inputs: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "source": self.source,
            "reason": self.reason,
            "at": self.at,
            "inputs": self.inputs,
        }


class Thresholds:
    """The stored choices of one deployment's table."""

    def __init__(self, table: Any) -> None:
        self.table = table

    def get(self, user: str | None = None) -> dict[str, Any] | None:
        item = self.table.get_item(Key={"pk": PK, "sk": _sk(user)}, ConsistentRead=True).get("Item")
        return None if item is None else _plain(item)

    def put(self, user: str | None, choice: Choice, mix: Mix, now: float) -> None:
        self.table.put_item(
            Item={
                "pk": PK,
                "sk": _sk(user),
                "threshold": choice.threshold,
                "at": int(now),
                "reason": choice.reason,
                "inputs": json.dumps(mix.summary()),
                "choice": json.dumps(choice.to_dict()),
            }
        )

    def drop(self, user: str) -> None:
        self.table.delete_item(Key={"pk": PK, "sk": _sk(user)})

    def drop_others(self, users: set[str]) -> int:
        """Drop the choices of users not in `users` (deleted since); how many."""
        found = query_all(self.table, Key("pk").eq(PK) & Key("sk").begins_with("U#"))
        gone = [i["sk"].removeprefix("U#") for i in found if i["sk"].removeprefix("U#") not in users]
        for user in gone:
            self.drop(user)
        return len(gone)

    def in_force(self, user: str, configured: int, fixed: bool) -> InForce:
        """The threshold for `user` now: one batched read of the two records."""
        if fixed:
            return InForce(
                configured, "configured", "hycloud:smallFileThresholdFixed is set: the configured value wins"
            )
        keys = [{"pk": PK, "sk": _sk(user)}, {"pk": PK, "sk": DEPLOYMENT}]
        got = self.table.meta.client.batch_get_item(RequestItems={self.table.name: {"Keys": keys}})
        items = {i["sk"]: i for i in got["Responses"].get(self.table.name, [])}
        for sk, source in ((_sk(user), "user"), (DEPLOYMENT, "deployment")):
            if sk in items:
                return _record(items[sk], source)
        return InForce(configured, "default", "the configured starting value: nothing chosen yet")


def accept_limit(found: InForce, configured: int, fixed: bool) -> int:
    """The largest small file the controller accepts: the larger of the threshold in force and the
    configured one (a client that asked before a change is not refused; the moves fix the side)."""
    return configured if fixed else max(found.threshold, configured)


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    return {k: int(v) if k in ("threshold", "at") else v for k, v in item.items()}


def _record(item: dict[str, Any], source: str) -> InForce:
    return InForce(
        int(item["threshold"]),
        source,
        str(item.get("reason", "")),
        int(item["at"]) if "at" in item else None,
        json.loads(item.get("inputs", "{}")),
    )


# --- the upkeep's step --------------------------------------------------------------------------


def user_mix(records: Records, user: str, now: float) -> Mix:
    """A user's files (sizes and ages, from their records) and metered reads and writes."""
    files = [
        (int(item.get("size", 0)), max(0.0, (now - float(item.get("mtime", now))) / 86400))
        for item in records.files_under(user, "/")
    ]
    meter = access_meter.read_meter(records.table, user)
    return Mix(files, meter, meter.days(now))


def _together(mixes: Iterable[Mix], now: float) -> Mix:
    files: list[tuple[int, float]] = []
    meter = access_meter.Meter()
    for m in mixes:
        files += m.files
        meter = meter.plus(m.meter)
    return Mix(files, meter, meter.days(now))


@dataclass
class Chosen:
    """What one round decided: the deployment's threshold and each user's, for the moves."""

    deployment: int
    users: dict[str, int] = field(default_factory=dict)  # users with their own threshold
    report: dict[str, Any] = field(default_factory=dict)

    def threshold_of(self, user: str) -> int:
        return self.users.get(user, self.deployment)


def choose_all(
    records: Records,
    users: list[str],
    prices: Prices,
    configured: int,
    guard: Guard | None = None,
    deployment: bool = True,
    now: float | None = None,
    budget_s: float = USER_BUDGET_S,
) -> Chosen:
    """One round: the deployment's choice from every user's mix together (unless `deployment` is
    False: an event naming users), then each user's own against it, the longest unjudged first,
    for `budget_s` (the rest keep what they have until the next round); stored, and returned."""
    now = time.time() if now is None else now
    store, g = Thresholds(records.table), guard or Guard()
    mixes = {u: user_mix(records, u, now) for u in users}
    stored = store.get()
    current = int(stored["threshold"]) if stored else clamp(configured)
    report: dict[str, Any] = {}
    if deployment:
        whole = _together(mixes.values(), now)
        picked = choose(whole, prices, current, g)
        if picked.bills:  # measured enough: the record says what was weighed, changed or not
            store.put(None, picked, whole, now)
        current = picked.threshold
        report["deployment"] = {"threshold": current, "reason": picked.reason, **whole.summary()}
        report["dropped"] = store.drop_others(set(users))  # users gone since
    chosen = Chosen(current, report=report)
    owns = {u: store.get(u) for u in users}
    started = time.monotonic()
    for user in sorted(users, key=lambda u: int((owns[u] or {}).get("at", 0))):
        own = owns[user]
        if time.monotonic() - started > budget_s:  # the next round goes on from here
            if own is not None:
                chosen.users[user] = int(own["threshold"])
            report["users_left"] = report.get("users_left", 0) + 1
            continue
        mine = choose_for_user(
            mixes[user], prices, current, None if own is None else int(own["threshold"]), g
        )
        if mine is None:
            if own is not None:
                store.drop(user)
            continue
        store.put(user, mine, mixes[user], now)
        chosen.users[user] = mine.threshold
        report.setdefault("users", {})[user] = {"threshold": mine.threshold, "reason": mine.reason}
    report["in_force"] = current
    return chosen
