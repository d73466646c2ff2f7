"""The upkeep chooses the small-file threshold from the measured mix (cost/thresholds.py), stores it
with its reasons, and moves files across it; the controller then judges uploads and answers
whoami and usage by it. An operator's fixed threshold wins."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys

import pytest

from tests.conftest import controller_as, load_function
from tests.unit.functions.conftest import TABLE, stores  # noqa: F401  (the fixture)

KiB, MiB = 1 << 10, 1 << 20
SIZE = 900_000  # a small file at the configured 2 MiB; cheaper in S3 when written once and never read
ANY = {"min_files": 1, "min_days": 0, "settle_s": 0}


@pytest.fixture
def alice(stores, lambda_context):  # noqa: F811
    """alice's internal id and a call as her; three 900 KB files put as small files."""
    from hycloud.admin import create_user
    from hycloud_core.store.users import Users

    call = controller_as(create_user(TABLE, "alice"), lambda_context)
    modules = {name: sys.modules[name] for name in ("small_files", "context")}  # the upkeep's load drops them

    for i in range(3):
        data = bytes([i]) * SIZE
        headers = {
            "x-hycloud-sha256": hashlib.sha256(data).hexdigest(),
            "content-type": "application/octet-stream",
        }
        assert call("PUT", "/v1/files", query={"path": f"/f{i}.bin"}, body=data, headers=headers)[0] == 201
    uid = Users(_table()).profile("alice")["id"]
    call.modules = modules  # type: ignore[attr-defined]
    return uid, call


def _table():
    import boto3

    return boto3.resource("dynamodb").Table(TABLE)


def _stored(sk: str) -> dict | None:
    return _table().get_item(Key={"pk": "THRESHOLD", "sk": sk}).get("Item")


def _fresh(call, method: str, path: str, **kw):
    call.modules["small_files"]._CACHE.clear()  # the controller keeps the threshold 15 s
    status, body = call(method, path, **kw)
    return status, json.loads(body)


def _storage(call, path: str) -> str:
    return json.loads(call("GET", "/v1/stat", query={"path": path})[1])["storage"]


def test_a_user_whose_mix_pays_gets_their_own_threshold_and_files_move_across_it(alice, lambda_context):
    uid, call = alice
    upkeep = load_function("maintenance")
    done = upkeep.handler({"walk": False, "thresholds": {"users": [uid], **ANY}}, lambda_context)
    assert done["thresholds"]["users"][uid]["threshold"] == 512 * KiB
    assert done["moves"]["to_s3"] == 3 and all(_storage(call, f"/f{i}.bin") == "large" for i in range(3))
    record = _stored(f"U#{uid}")
    assert int(record["threshold"]) == 512 * KiB and record["reason"].startswith("chose 512 KiB")
    inputs, choice = json.loads(record["inputs"]), json.loads(record["choice"])
    assert (inputs["files"], inputs["bytes"], inputs["writes_per_month"]) == (3, 3 * SIZE, 3)
    assert choice["bills"][str(512 * KiB)] < choice["bills"][str(2 * MiB)]
    assert _stored("DEPLOYMENT") is None  # an event naming users leaves the deployment's alone

    assert _fresh(call, "GET", "/v1/whoami")[1]["small_file_threshold"] == 512 * KiB
    shown = _fresh(call, "GET", "/v1/usage")[1]["threshold"]
    assert (shown["threshold"], shown["source"], shown["inputs"]["files"]) == (512 * KiB, "user", 3)

    # hysteresis: the next round keeps it and moves nothing
    again = upkeep.handler({"walk": False, "thresholds": {"users": [uid], **ANY}}, lambda_context)
    assert again["thresholds"]["users"][uid]["threshold"] == 512 * KiB and again["moves"]["to_s3"] == 0
    assert "cheapest" in _stored(f"U#{uid}")["reason"]


def test_too_little_measured_chooses_nothing(alice, lambda_context):
    uid, call = alice
    upkeep = load_function("maintenance")
    done = upkeep.handler(
        {"walk": False, "thresholds": {"users": [uid], "settle_s": 0, "deployment": True}}, lambda_context
    )
    assert "users" not in done["thresholds"] and done["moves"]["to_s3"] == 0
    assert _stored(f"U#{uid}") is None and _stored("DEPLOYMENT") is None  # 3 files < 1,000
    shown = _fresh(call, "GET", "/v1/usage")[1]["threshold"]
    assert (shown["threshold"], shown["source"]) == (2 * MiB, "default")


def test_the_deployment_chooses_from_every_user_and_a_user_like_it_has_no_record(alice, lambda_context):
    uid, call = alice
    upkeep = load_function("maintenance")
    done = upkeep.handler({"walk": False, "thresholds": {**ANY, "deployment": True}}, lambda_context)
    assert done["thresholds"]["deployment"]["threshold"] == 512 * KiB
    assert int(_stored("DEPLOYMENT")["threshold"]) == 512 * KiB
    assert _stored(f"U#{uid}") is None  # the deployment's is hers
    assert done["moves"]["to_s3"] == 3
    shown = _fresh(call, "GET", "/v1/usage")[1]["threshold"]
    assert (shown["threshold"], shown["source"]) == (512 * KiB, "deployment")


def test_a_fixed_threshold_wins_over_the_choice(alice, lambda_context, monkeypatch):
    uid, call = alice
    upkeep = load_function("maintenance")
    monkeypatch.setattr(upkeep, "CONFIG", dataclasses.replace(upkeep.CONFIG, small_file_threshold_fixed=True))
    done = upkeep.handler({"walk": False, "thresholds": {"users": [uid], **ANY}}, lambda_context)
    assert done["thresholds"] == {"fixed": 2 * MiB} and done["moves"]["to_s3"] == 0
    assert _stored(f"U#{uid}") is None
    # a choice stored before the operator fixed it is not in force
    upkeep.CONFIG = dataclasses.replace(upkeep.CONFIG, small_file_threshold_fixed=False)
    upkeep.handler({"walk": False, "thresholds": {"users": [uid], **ANY, "moves": False}}, lambda_context)
    assert _stored(f"U#{uid}") is not None
    fixed = dataclasses.replace(call.modules["context"].CONFIG, small_file_threshold_fixed=True)
    monkeypatch.setattr(call.modules["small_files"], "CONFIG", fixed)
    shown = _fresh(call, "GET", "/v1/usage")[1]["threshold"]
    assert (shown["threshold"], shown["source"]) == (2 * MiB, "configured")


def test_the_controller_meters_whole_file_reads_and_writes_by_size_band(alice):
    from hycloud_core.cost.access_meter import read_meter

    uid, call = alice
    for _ in range(2):
        assert call("GET", "/v1/files", query={"path": "/f0.bin"})[0] == 200
    meter = read_meter(_table(), uid)
    assert (meter.reads, meter.writes) == ({20: 2}, {20: 3})  # 900 KB: band (512 KiB, 1 MiB]
    assert meter.since is not None


def test_a_round_out_of_time_leaves_users_their_threshold_and_a_deployment_round_drops_users_gone(alice):
    from hycloud_core.cost import load_prices
    from hycloud_core.cost.threshold_choice import Guard
    from hycloud_core.cost.thresholds import choose_all
    from hycloud_core.store.records import Records

    uid, _ = alice
    records, prices, guard = Records(TABLE), load_prices(), Guard(min_files=1, min_days=0)
    assert choose_all(records, [uid], prices, 2 * MiB, guard, deployment=False).threshold_of(uid) == 512 * KiB
    late = choose_all(records, [uid], prices, 2 * MiB, guard, deployment=False, budget_s=-1)
    assert late.threshold_of(uid) == 512 * KiB and late.report["users_left"] == 1
    _table().put_item(Item={"pk": "THRESHOLD", "sk": "U#u-gone", "threshold": 4096})
    whole = choose_all(records, [uid], prices, 2 * MiB, guard)
    assert whole.report["dropped"] == 1 and _stored("U#u-gone") is None
