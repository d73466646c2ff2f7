"""Fixtures of the functions' unit tests: their settings and stores under moto, and the controller's
clock made a test's own (the long poll's waits take no real time)."""

from __future__ import annotations

import sys

import pytest
from moto import mock_aws

from tests.conftest import load_function, make_stores

TABLE, BUCKET = "hycloud-test", "hycloud-content"


@pytest.fixture
def stores(tmp_path, monkeypatch):
    """A function's settings (region, table, bucket, EFS root under tmp_path), and, inside moto,
    the bucket and table they name; yields the EFS root."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("HYCLOUD_TABLE", TABLE)
    monkeypatch.setenv("HYCLOUD_BUCKET", BUCKET)
    monkeypatch.setenv("HYCLOUD_EFS_ROOT", str(tmp_path / "efs"))
    with mock_aws():
        make_stores(BUCKET, TABLE)
        yield tmp_path / "efs"


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
