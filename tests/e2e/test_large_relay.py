"""Files too large for one relay function: the relay runs as a Step Functions Map over byte ranges.

The per-function limit is lowered to 8 MiB for these tests, so a 66 MiB file stands in for a
20 GiB one: nine ranges (the last a partial one) copied into one cache file at their offsets, then
the whole content hash checked from the ranges' part digests.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
import uuid

import pytest

from hycloud_core import content, paths
from hycloud_core.relay import byte_ranges
from tests.e2e.conftest import _make_user
from tests.e2e.executions import finished

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.exclusive]
MiB = 1024 * 1024
LIMIT = 8 * MiB
SIZE = 66 * MiB  # 8 whole ranges and a 2 MiB tail


@pytest.fixture(scope="module")
def ranged(deployment):
    """The controller relays files over 8 MiB through the Map (and starts no delta at commit, which
    would put the new version in the relay cache before the relay job does)."""
    lam, fn = deployment.client("lambda"), deployment.outputs["ControllerFunctionName"]
    before = lam.get_function_configuration(FunctionName=fn)["Environment"]["Variables"]
    limits = {"HYCLOUD_RELAY_RANGE_BYTES": str(LIMIT), "HYCLOUD_DELTA_PRECOMPUTE_BYTES": "0"}
    _configure(lam, fn, {**before, **limits})
    yield
    _configure(lam, fn, before)


def _configure(lam, fn: str, env: dict) -> None:
    lam.update_function_configuration(FunctionName=fn, Environment={"Variables": env})
    lam.get_waiter("function_updated_v2").wait(FunctionName=fn)


@pytest.fixture(scope="module")
def versions(deployment, ranged, tmp_path_factory):
    """A user holding two versions of a 66 MiB file at /big.bin (the second a scattered edit)."""
    user, tmp = _make_user(deployment, "bigrelay"), tmp_path_factory.mktemp("bigrelay")
    rnd = random.Random(13)
    old = rnd.randbytes(SIZE)
    new = bytearray(old)
    for _ in range(20):
        at = rnd.randrange(SIZE - 4096)
        new[at : at + 4096] = rnd.randbytes(4096)
    (tmp / "old").write_bytes(old)
    (tmp / "new").write_bytes(bytes(new))
    sdk = user.sdk()
    sdk.put(tmp / "old", "/big.bin", via="direct")
    sdk.put(tmp / "new", "/big.bin", via="direct")
    return user, tmp, old, bytes(new)


def _history(deployment, execution_arn: str) -> list[dict]:
    sfn, events, token = deployment.client("stepfunctions"), [], None
    while True:
        page = sfn.get_execution_history(
            executionArn=execution_arn, maxResults=1000, **({"nextToken": token} if token else {})
        )
        events += page["events"]
        if not (token := page.get("nextToken")):
            return events


def _count(events: list[dict], kind: str) -> int:
    return sum(e["type"] == kind for e in events)


def _sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_relay_over_the_limit_runs_through_the_map_and_caches_exact_bytes(deployment, versions):
    user, tmp, old, new = versions
    api = user.api()
    started = api.call("POST", "/v1/relay", json={"path": "/big.bin"})
    assert started.status_code == 200 and started.json()["state"] == "running", started.text
    job = started.json()["job"]
    deadline = time.monotonic() + 120
    while (status := api.call("GET", "/v1/relay", params={"path": "/big.bin", "wait": 10}).json())[
        "state"
    ] == "running":
        assert time.monotonic() < deadline, status
    assert status["state"] == "ready", status

    arn = deployment.outputs["RelayStateMachineArn"].replace(":stateMachine:", ":execution:") + f":{job}"
    events = _history(deployment, arn)
    ranges = len(byte_ranges(SIZE, LIMIT))
    assert ranges == 9
    assert _count(events, "MapIterationStarted") == ranges
    assert _count(events, "MapIterationSucceeded") == ranges
    assert _count(events, "TaskScheduled") == ranges + 1  # each range once, then Finish

    cached = deployment.efs_root() / "cache" / paths.cache_name(user.id, "/big.bin")
    assert _sha256(cached) == hashlib.sha256(new).hexdigest()
    assert not [p for p in cached.parent.glob(f".hc-ranges-{job}*")]  # no temporary file left
    across = 8 * MiB - 1000  # a ranged read over the seam of two ranges
    piece = api.call(
        "GET",
        "/v1/relay/data",
        params={"path": "/big.bin", "offset": across, "length": 3000},
        headers={"Accept": "application/octet-stream"},
    )
    assert piece.status_code == 200 and piece.content == new[across : across + 3000]

    # a delta job over the relayed version reads it from the cache: the client's old copy becomes it
    held = tmp / "held"
    held.write_bytes(old)
    user.sdk().get("/big.bin", held, via="delta")
    assert _sha256(held) == hashlib.sha256(new).hexdigest()


def test_a_failed_range_is_retried_alone(deployment, versions):
    """A drill fails range 3 once: only that range runs again, and the file is still exact."""
    user, _, old, _ = versions
    name = f"drill-{uuid.uuid4().hex[:8]}"
    ranges = byte_ranges(SIZE, LIMIT)
    job = f"drill-{uuid.uuid4().hex[:12]}"
    sfn = deployment.client("stepfunctions")
    execution = sfn.start_execution(
        stateMachineArn=deployment.outputs["RelayStateMachineArn"],
        name=job,
        input=json.dumps(
            {
                "job": job,
                "cache_name": name,
                "content_hash": content.hash_bytes(old),
                "size": SIZE,
                "ranges": ranges,
                "range_options": {"drill_fail_range": 3},
            }
        ),
    )["executionArn"]
    desc = finished(sfn, execution, timeout_s=120)
    assert desc["status"] == "SUCCEEDED", desc

    events = _history(deployment, execution)
    failed = [e for e in events if e["type"] == "TaskFailed"]
    assert len(failed) == 1 and failed[0]["taskFailedEventDetails"]["error"] == "RangeCopyFailed", failed
    assert _count(events, "TaskScheduled") == len(ranges) + 2  # one retry, then Finish
    cached = deployment.efs_root() / "cache" / name
    assert _sha256(cached) == hashlib.sha256(old).hexdigest()
    for leftover in (cached, cached.with_name(name + ".hcmeta")):
        os.unlink(leftover)
