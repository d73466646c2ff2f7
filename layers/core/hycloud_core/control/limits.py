"""Fair use: per-user limits on request rate and on queued plus running jobs (issue 29).

One user must not starve the rest, so each user gets

* a request rate: a token bucket of `rate_per_s` tokens a second holding at most `burst`,
  kept in DynamoDB per user (record `LIMIT#<user id>` / `RATE`) as GCRA: one number, the
  *theoretical arrival time* `tat_us` of the next request. A request is admitted when the bucket
  has a token, i.e. max(tat, now) + T - now <= burst * T (T = 1 / rate), and moves tat on by T.
  While the user is busy that is one conditional update per request (`SET tat = tat + T IF
  now <= tat <= now + (burst - 1) T`); the first request after an idle spell, or a refusal, costs
  a second one. Kept in DynamoDB rather than in each warm controller's memory because a flood
  at 24-way concurrency runs on up to 24 controllers: an in-memory bucket would let a user
  through 24 times its rate, and grow with the flood. What memory does keep is a refusal: a
  controller that refused a user until t refuses its further requests until t without asking
  DynamoDB (the bucket cannot refill sooner), so a flood of refused requests costs no writes.
  Cost: one write unit per admitted request (about $1.25 a million on demand, beside API
  Gateway's $3.50).
* a cap on jobs queued or running (`max_jobs`: relay, delta, tree, bundle, repair jobs): a
  counter (`LIMIT#<user id>` / `JOBS`, attribute `n`) moved in the same transaction that queues
  a job (+1, conditional on n < cap) and the one that releases it (-1), so it cannot drift from
  the queue and concurrent requests cannot overshoot the cap.

Both are answered 429 with `Retry-After`. Limits come from the deployment (CDK context
`hycloud:userRatePerS`, `hycloud:userBurst`, `hycloud:userMaxJobs` -> environment) and may be
set per user on the profile (`rate_per_s`, `burst`, `max_jobs`; `hycloud admin set-limits`).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ..errors import HyCloudError

ENV_RATE = "HYCLOUD_USER_RATE_PER_S"
ENV_BURST = "HYCLOUD_USER_BURST"
ENV_MAX_JOBS = "HYCLOUD_USER_MAX_JOBS"
ENV_JOB_RETRY_S = "HYCLOUD_JOB_RETRY_AFTER_S"
DEFAULT_RATE, DEFAULT_BURST, DEFAULT_MAX_JOBS = 100.0, 500, 64
LIMIT_PREFIX = "LIMIT#"
RATE_SK, JOBS_SK = "RATE", "JOBS"
PROFILE_FIELDS = ("rate_per_s", "burst", "max_jobs")


class TooManyRequestsError(HyCloudError):
    """429: the caller is over one of its limits; `retry_after` says when to try again."""

    status, code = 429, "too-many-requests"

    def __init__(self, message: str, retry_after: float, *, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.retry_after = max(1, math.ceil(retry_after))


def _env_number(name: str, default: float) -> float:
    value = os.environ.get(name)
    return float(value) if value else default


@dataclass(frozen=True)
class UserLimits:
    """One user's limits; 0 means unlimited."""

    rate_per_s: float = DEFAULT_RATE
    burst: int = DEFAULT_BURST
    max_jobs: int = DEFAULT_MAX_JOBS

    @classmethod
    def deployment(cls) -> UserLimits:
        return cls(
            rate_per_s=_env_number(ENV_RATE, DEFAULT_RATE),
            burst=int(_env_number(ENV_BURST, DEFAULT_BURST)),
            max_jobs=int(_env_number(ENV_MAX_JOBS, DEFAULT_MAX_JOBS)),
        )

    def for_profile(self, profile: Mapping[str, Any] | None) -> UserLimits:
        """The deployment's limits with the user's own (profile attributes) in their place."""
        own = {k: (profile or {}).get(k) for k in PROFILE_FIELDS}
        return UserLimits(
            rate_per_s=float(own["rate_per_s"]) if own["rate_per_s"] is not None else self.rate_per_s,
            burst=int(own["burst"]) if own["burst"] is not None else self.burst,
            max_jobs=int(own["max_jobs"]) if own["max_jobs"] is not None else self.max_jobs,
        )


def job_retry_after_s() -> float:
    """What a refused job is told to wait: about the time a short job takes to end."""
    return _env_number(ENV_JOB_RETRY_S, 2.0)


# The job cap of the request being served: (user id, cap). Set by the controller for each
# authenticated request and read where a job is queued (jobs/queue.py), so every route
# that queues a job is capped without passing the user's limits down through each.
CURRENT_JOB_CAP: ContextVar[tuple[str, int] | None] = ContextVar("hycloud_job_cap", default=None)


def job_cap(user: str) -> int | None:
    """The cap on `user`'s queued plus running jobs for this request; None: not capped (the
    dispatcher's and the operator's jobs, a request made for another user)."""
    current = CURRENT_JOB_CAP.get()
    if current is None or current[0] != user or current[1] <= 0:
        return None
    return current[1]


class RateLimiter:
    """The per-user GCRA bucket in DynamoDB, with each warm process's memory of refusals and of
    the tat it last set (so a user whose bucket refilled costs one write, not a failed one first)."""

    def __init__(self, table: Any) -> None:
        self.table = table
        self._errors = table.meta.client.exceptions
        self.refused_until: dict[str, float] = {}
        self.tat_seen: dict[str, int] = {}  # the tat this process last set, per user

    def admit(self, user: str, limits: UserLimits, now: float | None = None) -> None:
        """Take a token for one request of `user`, or raise TooManyRequestsError."""
        if limits.rate_per_s <= 0:
            return
        now = time.time() if now is None else now
        until = self.refused_until.get(user, 0.0)
        if now < until:
            raise _rate_refusal(until - now)
        interval = 1.0 / limits.rate_per_s
        now_us, t_us = round(now * 1e6), round(interval * 1e6)
        last_us = now_us + (max(1, limits.burst) - 1) * t_us  # the latest tat a request may find
        if self.tat_seen.get(user, -1) < now_us and self._idle(user, now_us, t_us):
            return  # refilled as far as this process knows: one write, not a failed one first
        for _ in range(2):
            tat = self._busy(user, now_us, t_us, last_us)
            if tat is None:
                return
            if tat > last_us:
                wait = (tat - last_us) / 1e6
                self.refused_until[user] = now + wait
                raise _rate_refusal(wait)
            if self._idle(user, now_us, t_us):
                return
        raise _rate_refusal(interval)  # lost both races to the user's own concurrent requests

    def _key(self, user: str) -> dict[str, str]:
        return {"pk": f"{LIMIT_PREFIX}{user}", "sk": RATE_SK}

    def _busy(self, user: str, now_us: int, t_us: int, last_us: int) -> int | None:
        """The usual case of a busy user: move tat on by T. None when admitted, else the tat found
        (-1 when the user has no bucket yet)."""
        try:
            answer = self.table.update_item(
                Key=self._key(user),
                UpdateExpression="SET tat_us = tat_us + :t",
                ConditionExpression="tat_us BETWEEN :now AND :last",
                ExpressionAttributeValues={":t": t_us, ":now": now_us, ":last": last_us},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                ReturnValues="UPDATED_NEW",
            )
            self.tat_seen[user] = int(_plain(answer["Attributes"]["tat_us"]))
            return None
        except self._errors.ConditionalCheckFailedException as err:
            item = getattr(err, "response", {}).get("Item")
            if item is None:
                item = self.table.get_item(Key=self._key(user), ConsistentRead=True).get("Item")
            return int(_plain(item["tat_us"])) if item and "tat_us" in item else -1

    def _idle(self, user: str, now_us: int, t_us: int) -> bool:
        """The bucket refilled (tat in the past, or no bucket): tat = now + T."""
        try:
            self.table.update_item(
                Key=self._key(user),
                UpdateExpression="SET tat_us = :next",
                ConditionExpression="attribute_not_exists(tat_us) OR tat_us < :now",
                ExpressionAttributeValues={":next": now_us + t_us, ":now": now_us},
            )
            self.tat_seen[user] = now_us + t_us
            return True
        except self._errors.ConditionalCheckFailedException:
            return False


def _plain(value: Any) -> Any:
    """A value from a low-level answer ({"N": "1"}) or a resource one (Decimal)."""
    if isinstance(value, dict) and "N" in value:
        return value["N"]
    return value


def _rate_refusal(wait_s: float) -> TooManyRequestsError:
    return TooManyRequestsError(
        "too many requests from this user; retry after the Retry-After seconds", wait_s, code="rate-limited"
    )


def jobs_refusal(cap: int) -> TooManyRequestsError:
    return TooManyRequestsError(
        f"this user already has {cap} jobs queued or running (the limit); retry when one ends",
        job_retry_after_s(),
        code="too-many-jobs",
    )
