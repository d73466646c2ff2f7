"""The idle monthly cost of a deployment (cost/idle.py): each item derived here from prices.json and
the shape's figures, so a price edit moves the expectation with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hycloud_core.cost import load_prices
from hycloud_core.cost.idle import (
    HOURS_PER_MONTH,
    IDLE_RUN_SECONDS,
    LOG_BYTES_PER_RUN,
    MINUTES_PER_MONTH,
    Shape,
    StackShape,
    deployment_shape,
    idle_monthly,
    shape_from_context,
)

ROOT = Path(__file__).resolve().parents[4]
CONTEXT = json.loads((ROOT / "cdk.json").read_text())["context"]
P = load_prices()


def _runs(every_minutes: float) -> float:
    return MINUTES_PER_MONTH / every_minutes


def _run_cost(every_minutes: float, memory_mb: int) -> float:
    per_run = memory_mb / 1024 * IDLE_RUN_SECONDS * P["lambda_gb_second"] + P["lambda_per_million"] / 1e6
    return _runs(every_minutes) * per_run


def _logs(runs: float) -> float:
    gb = runs * LOG_BYTES_PER_RUN / P.gb_bytes
    return gb * (P["cloudwatch_logs_ingest_gb"] + P["cloudwatch_logs_storage_gb_month"])


ENDPOINT_MONTH = 2 * HOURS_PER_MONTH * P["vpc_interface_endpoint_az_hour"]  # one endpoint in two AZs


def test_one_region_profile_is_one_endpoint_in_two_zones_and_its_schedules():
    cost = idle_monthly(shape_from_context({**CONTEXT, "hycloud:regions": "us-east-1"}), P)
    home = [(5, 512), (60, 512), (2, 512)]  # cache upkeep, namespace upkeep, dispatcher backstop
    runs = sum(_runs(m) for m, _ in home)
    assert cost.lines["interface_endpoints"] == pytest.approx(ENDPOINT_MONTH)
    assert cost.lines["scheduled_runs"] == pytest.approx(sum(_run_cost(m, mb) for m, mb in home))
    assert cost.lines["logs"] == pytest.approx(_logs(runs))
    assert cost.runs_per_month == pytest.approx(runs)
    for item in ("nat_gateways", "provisioned_concurrency", "alarms", "kms_keys"):
        assert cost.lines[item] == 0
    assert list(cost.by_stack) == ["HyCloud-Instance"]
    assert cost.total == pytest.approx(ENDPOINT_MONTH + sum(_run_cost(m, mb) for m, mb in home) + _logs(runs))


def test_default_three_regions_with_and_without_the_standby():
    plain = idle_monthly(shape_from_context(CONTEXT), P)
    home = [(5, 512), (60, 512), (2, 512), (60, 1024)]  # + the hourly coded-block sweep
    data = [(5, 512)]
    runs = sum(_runs(m) for m, _ in home) + 2 * _runs(5)
    assert set(plain.by_stack) == {
        "HyCloud-Instance",
        "HyCloud-Instance-us-west-2",
        "HyCloud-Instance-eu-west-1",
    }
    assert plain.lines["interface_endpoints"] == pytest.approx(3 * ENDPOINT_MONTH)
    scheduled = sum(_run_cost(m, mb) for m, mb in home) + 2 * sum(_run_cost(m, mb) for m, mb in data)
    assert plain.lines["scheduled_runs"] == pytest.approx(scheduled)
    assert plain.total == pytest.approx(3 * ENDPOINT_MONTH + scheduled + _logs(runs))

    standby = idle_monthly(shape_from_context({**CONTEXT, "hycloud:standby": "us-west-2"}), P)
    added = [(1, 1024), (2, 512)]  # replication every minute at home; the standby's dispatcher
    assert standby.by_stack["HyCloud-Instance-Standby"]["interface_endpoints"] == pytest.approx(
        ENDPOINT_MONTH
    )
    more_runs = sum(_runs(m) for m, _ in added)
    extra = ENDPOINT_MONTH + sum(_run_cost(m, mb) for m, mb in added) + _logs(more_runs)
    assert standby.total - plain.total == pytest.approx(extra)


def test_provisioned_concurrency_is_paid_per_gb_second_configured():
    cost = idle_monthly(shape_from_context({**CONTEXT, "hycloud:provisionedConcurrency": 2}), P)
    seconds = HOURS_PER_MONTH * 3600
    expected = 2 * (1769 + 3008) / 1024 * seconds * P["lambda_provisioned_gb_second"]
    assert cost.by_stack["HyCloud-Instance"]["provisioned_concurrency"] == pytest.approx(expected)
    assert cost.lines["provisioned_concurrency"] == pytest.approx(expected)  # data instances keep none warm


def test_nat_alarms_and_keys_are_priced_when_a_shape_has_them():
    stack = StackShape(
        "S", "us-east-1", interface_endpoints=("states", "lambda"), nat_gateways=1, alarms=3, kms_keys=1
    )

    lines = idle_monthly(Shape((stack,)), P).lines
    assert lines["interface_endpoints"] == pytest.approx(2 * ENDPOINT_MONTH)
    assert lines["nat_gateways"] == pytest.approx(HOURS_PER_MONTH * P["nat_gateway_hour"])
    assert lines["alarms"] == pytest.approx(3 * P["cloudwatch_alarm_month"])
    assert lines["kms_keys"] == pytest.approx(P["kms_key_month"])


def test_context_forms_and_no_schedule_for_the_standby():
    assert shape_from_context({"hycloud:regions": "us-east-1, eu-west-1"}).regions == [
        "us-east-1",
        "eu-west-1",
    ]
    assert shape_from_context({}).regions == ["us-east-1"]
    assert shape_from_context({"hycloud:standby": "none"}) == deployment_shape(["us-east-1"])
    quiet = shape_from_context({"hycloud:standby": "us-west-2", "hycloud:standbyEveryMinutes": 0})
    assert all(s.every_minutes != 0 for stack in quiet.stacks for s in stack.schedules)
    assert [s.name for s in quiet.stacks] == ["HyCloud-Instance", "HyCloud-Instance-Standby"]
