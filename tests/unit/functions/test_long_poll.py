"""The controller's long poll: a finished job is answered at once, a running one is checked less
and less often (each check reads the execution and the job's records)."""

from __future__ import annotations

import pytest


def test_a_job_that_ends_is_answered_at_the_next_check(poll_clock):
    module, clock = poll_clock
    states = iter([{"state": "running"}] * 3 + [{"state": "ready"}])
    answer = module.long_poll(lambda: next(states), 20, lambda s: s["state"] == "running")
    assert answer == {"state": "ready"}
    assert clock.now - 1000.0 < 0.3  # three short pauses: 50, 75 and 112 ms


def test_a_running_job_is_checked_less_often_and_answered_at_the_deadline(poll_clock):
    module, clock = poll_clock
    checks = []

    def fetch() -> dict:
        checks.append(clock.now)
        return {"state": "running"}

    answer = module.long_poll(fetch, 20, lambda s: s["state"] == "running")
    assert answer == {"state": "running"} and clock.now == pytest.approx(1020.0)
    assert len(checks) < 50  # at 50 ms apart it was 400
    assert max(b - a for a, b in zip(checks, checks[1:], strict=False)) <= 0.5
