"""What the controller's job services are tested with: a delta job's specs, the caller, and the
job service with Step Functions as a dict of execution statuses and no dispatch pass."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from hycloud_core.jobs.specs import DeltaDownloadSpec, DeltaUploadSpec
from tests.conftest import load_function

MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:delta"
H1, H2 = "a" * 64, "b" * 64
UPLOAD = DeltaUploadSpec(
    user="u-1", path="/f.bin", cache_name="u-1#f", content_hash=H2, base_hash=H1, base_cache_name=f"base#{H1}"
)
DOWNLOAD = DeltaDownloadSpec(cache_name="u-1#f", content_hash=H2, base_hash=H1, base_cache_name=f"base#{H1}")


class Caller:
    """What the services read of a route's router: the caller."""

    context = {"user": "u-1"}


def job_runs(monkeypatch: Any) -> tuple[ModuleType, dict[str, str]]:
    """services.job_runs, and the statuses its executions answer (absent unless set)."""
    load_function("controller")
    runs = importlib.import_module("services.job_runs")
    statuses: dict[str, str] = {}
    monkeypatch.setattr(runs.executions, "status", lambda machine, name: statuses.get(name, "ABSENT"))
    monkeypatch.setattr(runs.job_queue, "pump", lambda config=None: None)
    return runs, statuses
