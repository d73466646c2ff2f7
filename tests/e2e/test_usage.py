"""Usage and cost report on the deployment: what a user holds in EFS and S3, priced three ways."""

from __future__ import annotations

import json
import os

import pytest

pytestmark = pytest.mark.e2e
MiB = 1024 * 1024


def test_usage_report_counts_efs_and_s3_and_prices_three_layouts(deployment, tmp_path):
    from tests.e2e.conftest import _make_user

    carol = _make_user(deployment, "carol")
    big = os.urandom(5 * MiB)
    (tmp_path / "big").write_bytes(big)
    carol.cli("mkdir", "/d")
    for i in range(3):
        carol.sdk().put_bytes(f"/d/s{i}.txt", b"x" * 1000)
    carol.cli("put", str(tmp_path / "big"), "/d/big.bin")
    carol.cli("cp", "/d/big.bin", "/d/big-copy.bin")

    report = json.loads(carol.cli("--json", "usage").stdout)
    usage = report["usage"]
    assert usage["efs_files"] == 3 and usage["link_files"] == 2
    assert (
        usage["s3_objects"] == 1
        and usage["s3_bytes"] == len(big)
        and usage["s3_logical_bytes"] == 2 * len(big)
    )
    costs = report["costs"]
    assert 0 < costs["hybrid"]["total"] < costs["all-efs"]["total"] and costs["all-s3"]["total"] > 0
    # the copy shares its content: the hybrid layout bills it once, a plain all-S3 layout twice
    assert sum(costs["hybrid"]["billed_bytes"].values()) < sum(costs["all-s3"]["billed_bytes"].values())
    human = carol.cli("usage").stdout
    assert "EFS" in human and "S3" in human
