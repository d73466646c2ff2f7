"""The zstd level a client asks for a version-aware delta download: out of range is a 400 that
names the parameter, before any job or lookup (controller under moto)."""

from __future__ import annotations

import pytest

from tests.unit.functions.test_controller import cloud  # noqa: F401 (cloud: the fixture)


@pytest.mark.parametrize("level", ["0", "20", "-1", "3.5", "high"])
def test_a_level_out_of_range_is_a_400(cloud, level):  # noqa: F811
    call, _, _ = cloud
    body = {"path": "/big.bin", "base_hash": "0" * 64}
    status, answer, _ = call("alice", "POST", "/v1/delta/download", query={"level": level}, body=body)
    assert status == 400, answer
    assert answer["error"]["code"] == "bad-parameter" and "level" in answer["error"]["message"]


@pytest.mark.parametrize("level", ["1", "19"])
def test_a_level_in_range_passes_validation(cloud, level):  # noqa: F811
    call, _, _ = cloud
    body = {"path": "/big.bin", "base_hash": "0" * 64}
    status, answer, _ = call("alice", "POST", "/v1/delta/download", query={"level": level}, body=body)
    assert status in (404, 409), answer  # no such large file: refused past validation, not a 400
