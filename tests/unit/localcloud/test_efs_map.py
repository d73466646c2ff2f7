"""Access point -> folder mapping of the Lambda executor package (stdlib part, no LocalStack needed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "infra/local/lambda_executor"))

from hycloud_local_lambda import efs  # noqa: E402

AP1 = "arn:aws:elasticfilesystem:us-east-1:000000000000:access-point/fsap-0123456789abcdef0"
AP2 = "arn:aws:elasticfilesystem:us-east-1:000000000000:access-point/fsap-11111111111111111"


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("HYCLOUD_LOCALCLOUD", str(tmp_path))
    monkeypatch.setattr(efs, "_CONFIGS", {})
    monkeypatch.setattr(efs, "_KNOWN_ARNS", {})
    return tmp_path


def test_folder_per_access_point_and_maps(state):
    efs.set_configs("000000000000", "us-east-1", "fn-a", [{"Arn": AP1, "LocalMountPath": "/mnt/efs"}])
    efs.set_configs("000000000000", "us-east-1", "fn-b", [{"Arn": AP1, "LocalMountPath": "/mnt/data"}])
    efs.set_configs("000000000000", "us-east-1", "fn-c", [{"Arn": AP2, "LocalMountPath": "/mnt/efs"}])
    folder1, folder2 = state / "efs" / "fsap-0123456789abcdef0", state / "efs" / "fsap-11111111111111111"
    assert folder1.is_dir() and folder2.is_dir()
    assert json.loads((state / "efs" / "map.json").read_text()) == {AP1: str(folder1), AP2: str(folder2)}
    assert efs.mounts_for("000000000000", "us-east-1", "fn-b") == [(folder1, "/mnt/data")]
    functions = json.loads((state / "efs" / "functions.json").read_text())
    assert functions["arn:aws:lambda:us-east-1:000000000000:function:fn-c"] == [
        {"Arn": AP2, "LocalMountPath": "/mnt/efs", "LocalPath": str(folder2)}
    ]


def test_clearing_configs_and_other_regions(state):
    efs.set_configs("000000000000", "us-east-1", "fn", [{"Arn": AP1, "LocalMountPath": "/mnt/efs"}])
    efs.set_configs("000000000000", "us-east-1", "fn", None)
    assert efs.get_configs("000000000000", "us-east-1", "fn") == []
    assert efs.get_configs("000000000000", "eu-west-1", "fn") == []
    assert json.loads((state / "efs" / "functions.json").read_text()) == {}


@pytest.mark.parametrize(
    "arn", ["arn:aws:elasticfilesystem:us-east-1:0:access-point/..", "weird arn with spaces"]
)
def test_unsafe_ids_get_a_hashed_folder(state, arn):
    folder = efs.access_point_folder(arn)
    assert folder.parent == state / "efs" and folder.name.startswith("ap-") and len(folder.name) == 19
    assert folder == efs.access_point_folder(arn)
