import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hycloud_core.control.bandwidth import BandwidthEstimator, Direction, InstanceBandwidth, harmonic_mean


def test_harmonic_mean_is_total_bytes_over_total_time_for_equal_sizes():
    # 100 MB at 10 MB/s and 100 MB at 40 MB/s: 200 MB in 12.5 s.
    assert harmonic_mean([10e6, 40e6]) == pytest.approx(16e6)
    with pytest.raises(ValueError):
        harmonic_mean([])
    with pytest.raises(ValueError):
        harmonic_mean([1.0, 0.0])


def test_uses_only_the_last_five_transfers_of_the_period():
    est = BandwidthEstimator(period_s=60)
    est.record_transfer(now=0, nbytes=1, seconds=1)  # 1 B/s, pushed out by the five below
    for i, rate in enumerate([100, 200, 400, 400, 400]):
        est.record_transfer(now=10 + i, nbytes=rate * 2, seconds=2)
    assert len(est.samples) == 5
    assert est.estimate(now=20) == pytest.approx(harmonic_mean([100, 200, 400, 400, 400]))
    # 65 s: the transfers at 10 and 11 s left the period.
    assert est.estimate(now=71.5) == pytest.approx(harmonic_mean([400, 400, 400]))


def test_falls_back_to_the_last_probe_when_the_period_was_quiet():
    est = BandwidthEstimator(period_s=60)
    assert est.estimate(now=0) is None
    est.record_probe(now=0, rate=5e6)
    est.record_transfer(now=10, nbytes=10_000_000, seconds=1)
    assert est.estimate(now=30) == pytest.approx(10e6)
    est.record_probe(now=90, rate=7e6)
    assert est.estimate(now=100) == pytest.approx(7e6)


def _has_float(value) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return False


def test_instance_record_round_trips_through_json_without_floats():
    inst = InstanceBandwidth("us-east-1")
    inst.record_transfer(Direction.S3_TO_EFS, 10.0, 50_000_000, 0.5)
    inst.record_transfer(Direction.EFS_TO_CLIENT, 11.0, 50_000_000, 8.0)
    inst.record_probe(Direction.EFS_TO_CLIENT, 5.0, 6e6)
    item = inst.to_dict()
    assert not _has_float(item)  # boto3's DynamoDB layer rejects floats
    back = InstanceBandwidth.from_dict(json.loads(json.dumps(item)))
    assert back == inst
    for d in Direction:
        assert back.estimate(d, 20.0) == inst.estimate(d, 20.0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=1e3, max_value=1e9), min_size=1, max_size=12))
def test_estimate_lies_between_min_and_arithmetic_mean_of_recent_rates(rates):
    est = BandwidthEstimator(period_s=1000)
    for i, rate in enumerate(rates):
        est.record_transfer(now=i, nbytes=round(rate * 10), seconds=10)
    recent = [r for _, r in est.samples]
    value = est.estimate(now=len(rates))
    assert min(recent) - 1e-6 <= value <= sum(recent) / len(recent) + 1e-6
