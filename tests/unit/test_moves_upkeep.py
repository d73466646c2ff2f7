"""The upkeep function moves files across the threshold on its event (fs/threshold_moves.py), and
the controller serves a moved file as it served it before."""

from __future__ import annotations

import hashlib
import json

import pytest

from tests.conftest import controller_as, load_function
from tests.unit.functions.conftest import TABLE, stores  # noqa: F401  (the fixture)

DATA = bytes(range(256)) * 200  # 51,200 bytes


@pytest.fixture
def call(stores, lambda_context):  # noqa: F811
    from hycloud.admin import create_user

    call = controller_as(create_user(TABLE, "alice"), lambda_context)
    headers = {
        "x-hycloud-sha256": hashlib.sha256(DATA).hexdigest(),
        "content-type": "application/octet-stream",
    }
    assert call("PUT", "/v1/files", query={"path": "/f.bin"}, body=DATA, headers=headers)[0] == 201
    return call


def test_upkeep_moves_a_file_across_the_threshold_both_ways_on_its_event(call, lambda_context):
    upkeep = load_function("maintenance")
    before = json.loads(call("GET", "/v1/stat", query={"path": "/f.bin"})[1])
    fresh = upkeep.handler({"walk": False, "moves": {"threshold": 40_000}}, lambda_context)["moves"]
    assert fresh["to_s3"] == 0  # changed a moment ago: not settled
    moved = upkeep.handler({"walk": False, "moves": {"threshold": 40_000, "settle_s": 0}}, lambda_context)
    assert (moved["moves"]["to_s3"], moved["moves"]["moved_bytes"]) == (1, len(DATA))
    large = json.loads(call("GET", "/v1/stat", query={"path": "/f.bin"})[1])
    assert large["storage"] == "large"
    assert (large["size"], large["content_hash"], large["mtime"]) == (
        before["size"],
        before["content_hash"],
        before["mtime"],
    )
    back = upkeep.handler({"walk": False, "moves": {"settle_s": 0}}, lambda_context)["moves"]
    assert back["to_efs"] == 1  # the deployment's threshold (2 MiB) is above it
    status, body = call("GET", "/v1/files", query={"path": "/f.bin"})
    assert status == 200 and body == DATA
