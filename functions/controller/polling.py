"""Long polls: a job's state held until it ends or the request must answer."""

from __future__ import annotations

import time
from collections.abc import Callable

from aws_lambda_powertools.event_handler.api_gateway import BaseRouter

from hycloud_core.api_limits import ANSWER_MARGIN_S, GATEWAY_TIMEOUT_S, MAX_WAIT_S


def answer_deadline() -> float:
    """The `time.monotonic()` by which this request's answer must be on its way: ANSWER_MARGIN_S
    before API Gateway answers 504 in its place, counted from when API Gateway took the request
    (the event's requestTimeEpoch), and before the function's own timeout. Outside a request,
    from now."""
    budget = GATEWAY_TIMEOUT_S - ANSWER_MARGIN_S
    left = budget
    try:
        taken = BaseRouter.current_event.request_context.request_time_epoch / 1000
        left = taken + budget - time.time()
    except (AttributeError, KeyError, TypeError):
        pass
    try:
        left = min(left, BaseRouter.lambda_context.get_remaining_time_in_millis() / 1000 - ANSWER_MARGIN_S)
    except AttributeError:
        pass
    return time.monotonic() + max(0.0, min(left, budget))


def long_poll(fetch: Callable[[], dict], wait_s: float, running: Callable[[dict], bool]) -> dict:
    """Fetch a job's state, holding up to `wait_s` (at most MAX_WAIT_S, and never past the
    request's `answer_deadline`) while `running` says it has not ended.

    Saves the client a round trip per poll on a slow link: it learns of the end at once; a job
    still running is answered as such and the client asks again. The checks start 50 ms apart,
    for short jobs, and spread to 0.5 s: each one reads the job's execution and records, and a
    client held for 20 s would otherwise cost 400 of those reads (Step Functions'
    DescribeExecution is throttled per account).
    """
    deadline = min(time.monotonic() + min(wait_s, MAX_WAIT_S), answer_deadline())
    pause = 0.05
    while True:
        state = fetch()
        if not running(state) or time.monotonic() >= deadline:
            return state
        time.sleep(min(pause, max(deadline - time.monotonic(), 0.0)))
        pause = min(pause * 1.5, 0.5)
