"""Fair use in the controller: each authenticated request takes a token from its user's bucket
and carries the user's job cap; a request over either limit is answered 429 with `Retry-After`.

The limits and their costs are described in hycloud_core.control.limits. The rate check runs
right after authentication (before idempotency and the route), so a refused request does no
work; the job cap is checked where a job is queued (QueueStore.enqueue), whichever route queues
it, and its refusal is turned into the same 429 answer here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from answers import error_answer
from aws_lambda_powertools.event_handler import Response

from hycloud_core.control.limits import CURRENT_JOB_CAP, RateLimiter, TooManyRequestsError, UserLimits

DEPLOYMENT = UserLimits.deployment()


@cache
def _limiter(table: Any) -> RateLimiter:
    return RateLimiter(table)


def guarded(table: Any, user_id: str, profile: Mapping[str, Any], serve: Callable[[], Response]) -> Response:
    """Serve one request of `user_id` within its limits (its profile may set its own)."""
    limits = DEPLOYMENT.for_profile(profile)
    try:
        _limiter(table).admit(user_id, limits)
    except TooManyRequestsError as err:
        return error_answer(err)
    token = CURRENT_JOB_CAP.set((user_id, limits.max_jobs))
    try:
        return serve()
    except TooManyRequestsError as err:
        return error_answer(err)
    finally:
        CURRENT_JOB_CAP.reset(token)
