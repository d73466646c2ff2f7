"""Long polls answer inside API Gateway's 29 s: a request is held at most MAX_WAIT_S, and never
past ANSWER_MARGIN_S before API Gateway (from when it took the request) or the function's own
timeout would end it; a longer `wait` is accepted and cut."""

from __future__ import annotations

import sys
import time
from types import SimpleNamespace

import pytest
from pydantic import TypeAdapter, ValidationError

from hycloud_core import api_limits


def in_request(monkeypatch, module, taken_s_ago: float, lambda_left_s: float = 29.0) -> None:
    """API Gateway took the request `taken_s_ago`; the function has `lambda_left_s` left."""
    epoch_ms = int((time.time() - taken_s_ago) * 1000)
    event = SimpleNamespace(request_context=SimpleNamespace(request_time_epoch=epoch_ms))
    context = SimpleNamespace(get_remaining_time_in_millis=lambda: int(lambda_left_s * 1000))
    monkeypatch.setattr(module.BaseRouter, "current_event", event, raising=False)
    monkeypatch.setattr(module.BaseRouter, "lambda_context", context, raising=False)


def held(module, clock, wait_s: float) -> tuple[float, int]:
    """Seconds a job that never ends is held for, and how many times it was checked."""
    checks = []

    def fetch() -> dict:
        checks.append(clock.now)
        return {"state": "running"}

    started = clock.now
    assert module.long_poll(fetch, wait_s, lambda s: s["state"] == "running") == {"state": "running"}
    return clock.now - started, len(checks)


def test_a_wait_longer_than_the_cap_is_held_at_most_max_wait(poll_clock):
    module, clock = poll_clock
    seconds, _ = held(module, clock, 3600)
    assert seconds == pytest.approx(api_limits.MAX_WAIT_S)
    assert api_limits.MAX_WAIT_S + api_limits.ANSWER_MARGIN_S < api_limits.GATEWAY_TIMEOUT_S


def test_time_already_spent_on_the_request_is_taken_off_the_hold(poll_clock, monkeypatch):
    module, clock = poll_clock
    in_request(monkeypatch, module, taken_s_ago=10)
    seconds, _ = held(module, clock, 20)
    budget = api_limits.GATEWAY_TIMEOUT_S - api_limits.ANSWER_MARGIN_S - 10
    assert seconds == pytest.approx(budget, abs=0.2) and 10 + seconds < api_limits.GATEWAY_TIMEOUT_S - 3


def test_a_request_near_api_gateways_timeout_is_answered_after_one_check(poll_clock, monkeypatch):
    module, clock = poll_clock
    in_request(monkeypatch, module, taken_s_ago=26)
    assert held(module, clock, 20) == (0.0, 1)


def test_the_functions_own_timeout_bounds_the_hold_too(poll_clock, monkeypatch):
    module, clock = poll_clock
    in_request(monkeypatch, module, taken_s_ago=0, lambda_left_s=8)
    seconds, _ = held(module, clock, 20)
    assert seconds == pytest.approx(8 - api_limits.ANSWER_MARGIN_S, abs=0.01)


def test_a_job_that_ends_is_still_answered_at_once(poll_clock, monkeypatch):
    module, clock = poll_clock
    in_request(monkeypatch, module, taken_s_ago=1)
    states = iter([{"state": "running"}, {"state": "ready"}])
    assert module.long_poll(lambda: next(states), 3600, lambda s: s["state"] == "running") == {
        "state": "ready"
    }
    assert clock.now - 1000.0 < 0.1


def test_the_wait_parameter_is_cut_to_the_cap_and_bounded(poll_clock):
    models = sys.modules["models"]
    wait = TypeAdapter(models.Wait)
    assert wait.validate_python(3600) == api_limits.MAX_WAIT_S
    assert wait.validate_python(2.5) == 2.5
    for bad in (-1, 3601, float("inf")):
        with pytest.raises(ValidationError):
            wait.validate_python(bad)
