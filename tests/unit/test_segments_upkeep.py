"""Segments through the deployed functions' code under moto: the upkeep packs when its event or the
deployment says so, and the controller answers a packed file as it answers any small file."""

from __future__ import annotations

import hashlib
import json

import pytest

from hycloud_core.fs import segments_read
from tests.conftest import controller_as, load_function
from tests.unit.functions.conftest import TABLE, stores  # noqa: F401  (the fixture)

FILES = {f"/f{i}.bin": bytes([65 + i]) * (5000 + 3000 * i) for i in range(3)}


@pytest.fixture
def call(stores, lambda_context):  # noqa: F811
    from hycloud.admin import create_user

    segments_read.reset()  # a client of an earlier fake S3 must not answer this one
    call = controller_as(create_user(TABLE, "alice"), lambda_context, with_headers=True)
    for path, data in FILES.items():
        headers = {
            "x-hycloud-sha256": hashlib.sha256(data).hexdigest(),
            "content-type": "application/octet-stream",
        }
        assert call("PUT", "/v1/files", query={"path": path}, body=data, headers=headers)[0] == 201
    yield call
    segments_read.reset()


def test_upkeep_packs_on_its_event_and_the_api_reads_packed_files(call, lambda_context, monkeypatch):
    upkeep = load_function("maintenance")
    assert "segments" not in upkeep.handler({"walk": False}, lambda_context)
    done = upkeep.handler({"walk": False, "segments": {"pack_after_s": 0}}, lambda_context)["segments"]
    assert done["packed_files"] == 3 and len(done["segments_written"]) == 1
    for path, data in FILES.items():
        status, body, headers = call("GET", "/v1/files", query={"path": path})
        assert status == 200 and body == data
        assert headers["x-hycloud-sha256"] == hashlib.sha256(data).hexdigest()
        status, body, _ = call("GET", "/v1/stat", query={"path": path})
        entry = json.loads(body)
        assert (entry["size"], entry["sha256"]) == (len(data), hashlib.sha256(data).hexdigest())


def test_the_hourly_walk_packs_only_when_the_deployment_says_so(call, lambda_context, monkeypatch):
    upkeep = load_function("maintenance")
    assert "segments" not in upkeep.handler({"grace_s": 0}, lambda_context)  # not configured
    monkeypatch.setenv("HYCLOUD_SEGMENT_AFTER_S", "0")
    assert upkeep.handler({"grace_s": 0}, lambda_context)["segments"]["packed_files"] == 3
