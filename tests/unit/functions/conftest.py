"""The controller's clock, made a test's own (the long poll's waits take no real time)."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import load_function


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def poll_clock(monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("HYCLOUD_EFS_ROOT", str(tmp_path / "efs"))
    load_function("controller")
    module = sys.modules["polling"]
    clock = Clock()
    monkeypatch.setattr(module.time, "monotonic", clock.monotonic)
    monkeypatch.setattr(module.time, "sleep", clock.sleep)
    monkeypatch.delattr(module.BaseRouter, "current_event", raising=False)  # outside a request
    monkeypatch.delattr(module.BaseRouter, "lambda_context", raising=False)
    return module, clock
