"""A bucket template's LifecycleConfiguration becomes the S3 API's, rule for rule (moto's S3)."""

from __future__ import annotations

import sys
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "infra/local/lambda_executor"))

from hycloud_local_lambda.s3_lifecycle import apply, lifecycle_from_cfn  # noqa: E402

# the content bucket's rules as the CDK app synthesizes them (tests/infra/test_storage_tiers.py)
TEMPLATE = {
    "Rules": [
        {"AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7}, "Status": "Enabled"},
        {"ExpirationInDays": 1, "Prefix": "shares/", "Status": "Enabled"},
        {
            "Id": "tier-objects",
            "ObjectSizeGreaterThan": 131071,
            "Prefix": "objects/",
            "Status": "Enabled",
            "Transitions": [{"StorageClass": "INTELLIGENT_TIERING", "TransitionInDays": 0}],
        },
    ]
}


def test_rules_translate_to_filters_expirations_and_transitions():
    assert lifecycle_from_cfn(TEMPLATE) == {
        "Rules": [
            {
                "ID": "rule-0",
                "Filter": {"Prefix": ""},
                "Status": "Enabled",
                "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7},
            },
            {"ID": "rule-1", "Filter": {"Prefix": "shares/"}, "Status": "Enabled", "Expiration": {"Days": 1}},
            {
                "ID": "tier-objects",
                "Filter": {"And": {"Prefix": "objects/", "ObjectSizeGreaterThan": 131071}},
                "Status": "Enabled",
                "Transitions": [{"StorageClass": "INTELLIGENT_TIERING", "Days": 0}],
            },
        ]
    }
    assert lifecycle_from_cfn(None) is None and lifecycle_from_cfn({"Rules": []}) is None


def test_tag_filters_and_a_lone_tag():
    one = {"Status": "Enabled", "ExpirationInDays": 3, "TagFilters": [{"Key": "k", "Value": "v"}]}
    assert lifecycle_from_cfn({"Rules": [one]})["Rules"][0]["Filter"] == {"Tag": {"Key": "k", "Value": "v"}}
    both = {**one, "Prefix": "p/"}
    assert lifecycle_from_cfn({"Rules": [both]})["Rules"][0]["Filter"] == {
        "And": {"Prefix": "p/", "Tags": [{"Key": "k", "Value": "v"}]}
    }


@mock_aws
def test_apply_puts_the_rules_and_removes_them_when_the_template_drops_them():
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="content")
    apply(s3, "content", TEMPLATE)
    rules = {r["ID"]: r for r in s3.get_bucket_lifecycle_configuration(Bucket="content")["Rules"]}
    assert rules["tier-objects"]["Transitions"] == [{"Days": 0, "StorageClass": "INTELLIGENT_TIERING"}]
    assert rules["rule-1"]["Expiration"] == {"Days": 1}
    apply(s3, "content", None)
    with pytest.raises(ClientError, match="NoSuchLifecycleConfiguration"):
        s3.get_bucket_lifecycle_configuration(Bucket="content")
