"""`hycloud usage --json` prices the user's files in Amazon S3 Files too, and the relay per GB
from what the deployment's relay runs measured."""

from __future__ import annotations

import json
import os

import pytest

from tests.e2e.conftest import _make_user

pytestmark = pytest.mark.e2e
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


def test_usage_has_an_s3_files_column_and_a_measured_relay_cost(deployment, tmp_path):
    carol = _make_user(deployment, "cost")  # a user of its own: the shared ones hold other tests' files
    small, large = os.urandom(100 * KiB), os.urandom(3 * MiB + 17)
    (tmp_path / "small.bin").write_bytes(small)
    (tmp_path / "large.bin").write_bytes(large)
    carol.cli("put", str(tmp_path / "small.bin"), "/small.bin")
    carol.cli("put", str(tmp_path / "large.bin"), "/large.bin")
    carol.cli("get", "--via", "relay", "/large.bin", str(tmp_path / "back.bin"))
    assert (tmp_path / "back.bin").read_bytes() == large

    report = json.loads(carol.cli("--json", "usage").stdout)
    s3_files = report["costs"]["s3-files"]
    logical = len(small) + len(large)
    # every file is an S3 object; only the file under 128 KiB is also on file-system storage
    assert s3_files["billed_bytes"] == {"s3": logical, "s3files_fs": len(small)}
    assert s3_files["lines"]["s3_data"] == pytest.approx(logical / GiB * 0.023, abs=1e-6)
    assert s3_files["lines"]["s3files_fs_data"] == pytest.approx(len(small) / GiB * 0.30, abs=1e-6)
    assert report["costs"]["all-s3"]["total"] < s3_files["total"]  # file-system storage costs extra

    relay = report["relay"]
    assert relay["runs"] >= 1 and relay["bytes"] >= len(large) and relay["seconds"] > 0
    # the relay's own figures: at least the EFS write price per GB, far below a dollar
    assert 0.06 <= relay["usd_per_gb"] < 1.0

    text = carol.cli("usage").stdout
    assert "Amazon S3 Files" in text and "/GB" in text
