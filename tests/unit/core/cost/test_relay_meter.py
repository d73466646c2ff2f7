"""The relay's run counters in DynamoDB and the cost per GB priced from them."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from hycloud_core.cost import load_prices
from hycloud_core.cost.relay_meter import RelayStats, read_stats, record_run, relay_cost

P = load_prices()
GiB = 1 << 30


@pytest.fixture
def table():
    with mock_aws():
        ddb = boto3.resource("dynamodb", region_name="us-east-1")
        yield ddb.create_table(
            TableName="t",
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )


def test_runs_add_up(table):
    # Sequential on purpose: the fake table is not atomic across threads; concurrent runs rely on
    # DynamoDB's ADD, which the relay updates in one expression.
    assert read_stats(table) == RelayStats()
    for _ in range(8):
        record_run(table, 1000, 250.0, 1769)
    record_run(table, 0, 10.0, 1769)  # a cache hit: no bytes, still paid for
    assert read_stats(table) == RelayStats(
        runs=9, bytes=8000, mb_ms=8 * 250 * 1769 + 10 * 1769, duration_ms=2010
    )


def test_cost_per_gb_from_measured_runs():
    # one run moving 1 GiB in 10 s on a 1 GiB function: 10 GB-s
    stats = RelayStats(runs=1, bytes=GiB, mb_ms=1024 * 10_000, duration_ms=10_000)
    report = relay_cost(stats, P)
    assert report["lines"]["lambda_duration"] == pytest.approx(10 * 0.0000166667)
    assert report["lines"]["s3_get_requests"] == pytest.approx(128 / 1000 * 0.0004)
    assert report["lines"]["efs_writes"] == pytest.approx(0.06)
    assert report["lines"]["step_functions"] == pytest.approx(6 / 1000 * 0.025)
    assert report["usd_per_gb"] == pytest.approx(report["total"], rel=1e-5)
    assert report["mib_per_second"] == pytest.approx(102.4)


def test_no_bytes_relayed_has_no_cost_per_gb():
    assert relay_cost(RelayStats(), P)["usd_per_gb"] is None
    assert relay_cost(RelayStats(runs=2, mb_ms=1769 * 20, duration_ms=20), P)["usd_per_gb"] is None
