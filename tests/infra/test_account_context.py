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


@pytest.mark.slow
def test_a_redeploy_after_destroy_stops_before_colliding_with_retained_names(monkeypatch):
    """Fixed names plus RETAIN: a destroyed deployment's data-instance bucket and standby table are
    still there; deploy names them with how to delete them instead of failing half-way."""
    import boto3
    from moto import mock_aws

    monkeypatch.delenv("HYCLOUD_STANDBY_REGION", raising=False)
    monkeypatch.setenv("CDK_CONTEXT", "-c hycloud:standby=us-west-1")
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    acct = "123456789012"
    with mock_aws():
        assert account.collisions(acct) == []  # a first deploy: nothing in the way
        boto3.client("s3", region_name="eu-west-1").create_bucket(
            Bucket=f"hycloud-instance-eu-west-1-{acct}",
            CreateBucketConfiguration={"LocationConstraint": "eu-west-1"},
        )
        boto3.client("dynamodb", region_name="us-west-1").create_table(
            TableName="HyCloud-Instance-Standby-Table",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        taken = account.collisions(acct)
        assert sorted((r, n) for r, _, n, _ in taken) == [
            ("eu-west-1", f"hycloud-instance-eu-west-1-{acct}"),
            ("us-west-1", "HyCloud-Instance-Standby-Table"),
        ]
        boto3.client("cloudformation", region_name="eu-west-1").create_stack(  # its stack is live: an update
            StackName="HyCloud-Instance-eu-west-1",
            TemplateBody='{"Resources": {"T": {"Type": "AWS::SNS::Topic"}}}',
        )
        assert [n for _, _, n, _ in account.collisions(acct)] == ["HyCloud-Instance-Standby-Table"]
        monkeypatch.setattr(account, "_cdk", lambda args: pytest.fail("deployed into a collision"))
        monkeypatch.setattr(account.boto3.session.Session, "region_name", "us-east-1")
        with pytest.raises(SystemExit, match="HyCloud-Instance-Standby-Table"):
            account.deploy(__import__("pathlib").Path("/nonexistent"), "first")
