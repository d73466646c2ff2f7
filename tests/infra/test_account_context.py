"""`make deploy CDK_CONTEXT="-c ..."`: infra/account.py passes the overrides to every cdk command
and bootstraps the regions they name (the one-region profile bootstraps one region, not three)."""

from __future__ import annotations

import account
import pytest


def test_no_context_is_cdk_json(monkeypatch):
    monkeypatch.delenv("CDK_CONTEXT", raising=False)
    monkeypatch.delenv("HYCLOUD_STANDBY_REGION", raising=False)
    assert account.context_args() == []
    assert account.regions("us-east-1") == ["us-east-1", "us-west-2", "eu-west-1"]


def test_one_region_profile_bootstraps_one_region_and_reaches_cdk(monkeypatch, tmp_path):
    monkeypatch.delenv("HYCLOUD_STANDBY_REGION", raising=False)
    monkeypatch.setenv("CDK_CONTEXT", "-c hycloud:regions=us-east-1 --context hycloud:standby=none")
    assert account.regions("us-east-1") == ["us-east-1"]
    ran = []
    monkeypatch.setattr(account, "_local", lambda: False)
    monkeypatch.setattr(account.subprocess, "run", lambda args, **kw: ran.append(args))
    (tmp_path / "cdk").write_text("")  # the CLI's place, not run
    monkeypatch.setattr(account, "BIN", tmp_path)
    account._cdk(["deploy", "--all"])
    assert ran[0][1:] == [
        "deploy",
        "--all",
        "-c",
        "hycloud:regions=us-east-1",
        "--context",
        "hycloud:standby=none",
    ]


def test_standby_and_several_regions_from_context(monkeypatch):
    monkeypatch.delenv("HYCLOUD_STANDBY_REGION", raising=False)
    monkeypatch.setenv("CDK_CONTEXT", "-c hycloud:regions=us-east-1,eu-west-1 -c hycloud:standby=us-west-2")
    assert account.regions("us-east-1") == ["us-east-1", "eu-west-1", "us-west-2"]


@pytest.mark.parametrize("bad", ["hycloud:regions=us-east-1", "-c", "-c hycloud:regions", "--all"])
def test_anything_but_context_pairs_is_refused(monkeypatch, bad):
    monkeypatch.setenv("CDK_CONTEXT", bad)
    with pytest.raises(SystemExit, match="CDK_CONTEXT"):
        account.context_args()
