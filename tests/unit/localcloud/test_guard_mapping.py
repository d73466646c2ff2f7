"""Which IAM actions and resources the local cloud's guard checks for an AWS call, as AWS documents them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from botocore.exceptions import EndpointConnectionError

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "infra/local/lambda_executor"))

from hycloud_local_lambda.guard import (  # noqa: E402
    REACH_MARKER,
    Facts,
    Guard,
    iam_checks,
    lambda_function_arn,
    parse_modes,
)

R, A = "us-west-2", "123456789012"


def checks(service: str, op: str, params: dict) -> list[tuple[str, str]]:
    return iam_checks(service, op, params, R, A)[0]


def test_s3_reads_lists_and_multipart_map_to_their_documented_actions():
    assert checks("s3", "HeadObject", {"Bucket": "b", "Key": "k/1"}) == [
        ("s3:GetObject", "arn:aws:s3:::b/k/1")
    ]
    assert checks("s3", "ListObjectsV2", {"Bucket": "b"}) == [("s3:ListBucket", "arn:aws:s3:::b")]
    assert checks("s3", "HeadBucket", {"Bucket": "b"}) == [("s3:ListBucket", "arn:aws:s3:::b")]
    for op in ("PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"):
        assert checks("s3", op, {"Bucket": "b", "Key": "k"}) == [("s3:PutObject", "arn:aws:s3:::b/k")]
    assert checks("s3", "ListParts", {"Bucket": "b", "Key": "k"}) == [
        ("s3:ListMultipartUploadParts", "arn:aws:s3:::b/k")
    ]
    assert checks("s3", "ListMultipartUploads", {"Bucket": "b"}) == [
        ("s3:ListBucketMultipartUploads", "arn:aws:s3:::b")
    ]
    assert checks("s3", "AbortMultipartUpload", {"Bucket": "b", "Key": "k"}) == [
        ("s3:AbortMultipartUpload", "arn:aws:s3:::b/k")
    ]


def test_s3_copies_need_put_on_the_destination_and_get_on_the_source():
    expected = [("s3:PutObject", "arn:aws:s3:::dst/d"), ("s3:GetObject", "arn:aws:s3:::src/a/b")]
    assert checks("s3", "CopyObject", {"Bucket": "dst", "Key": "d", "CopySource": "src/a/b"}) == expected
    source = {"Bucket": "src", "Key": "a/b"}
    assert checks("s3", "UploadPartCopy", {"Bucket": "dst", "Key": "d", "CopySource": source}) == expected


def test_s3_delete_objects_checks_each_key():
    params = {"Bucket": "b", "Delete": {"Objects": [{"Key": "1"}, {"Key": "2"}]}}
    assert checks("s3", "DeleteObjects", params) == [
        ("s3:DeleteObject", "arn:aws:s3:::b/1"),
        ("s3:DeleteObject", "arn:aws:s3:::b/2"),
    ]


def test_dynamodb_tables_indexes_and_transactions():
    table = f"arn:aws:dynamodb:{R}:{A}:table/T"
    assert checks("dynamodb", "GetItem", {"TableName": "T"}) == [("dynamodb:GetItem", table)]
    assert checks("dynamodb", "Query", {"TableName": "T", "IndexName": "I"}) == [
        ("dynamodb:Query", f"{table}/index/I")
    ]
    items = [
        {"Put": {"TableName": "T"}},
        {"Update": {"TableName": "U"}},
        {"ConditionCheck": {"TableName": "T"}},
    ]
    assert checks("dynamodb", "TransactWriteItems", {"TransactItems": items}) == [
        ("dynamodb:PutItem", table),
        ("dynamodb:UpdateItem", f"arn:aws:dynamodb:{R}:{A}:table/U"),
        ("dynamodb:ConditionCheckItem", table),
    ]
    assert checks("dynamodb", "TransactGetItems", {"TransactItems": [{"Get": {"TableName": "T"}}]}) == [
        ("dynamodb:GetItem", table)
    ]
    assert checks("dynamodb", "BatchWriteItem", {"RequestItems": {"T": []}}) == [
        ("dynamodb:BatchWriteItem", table)
    ]


def test_states_lambda_and_sts():
    sm = f"arn:aws:states:{R}:{A}:stateMachine:M"
    assert checks("states", "StartExecution", {"stateMachineArn": sm}) == [("states:StartExecution", sm)]
    ex = f"arn:aws:states:{R}:{A}:execution:M:e"
    assert checks("states", "DescribeExecution", {"executionArn": ex}) == [("states:DescribeExecution", ex)]
    fn = f"arn:aws:lambda:{R}:{A}:function:f"
    assert checks("lambda", "Invoke", {"FunctionName": "f"}) == [("lambda:InvokeFunction", fn)]
    assert checks("lambda", "Invoke", {"FunctionName": "f", "Qualifier": "warm"}) == [
        ("lambda:InvokeFunction", f"{fn}:warm")
    ]
    assert checks("sts", "GetCallerIdentity", {}) == []
    assert iam_checks("sqs", "SendMessage", {}, R, A) == ([("sqs:SendMessage", "*")], False)


def test_lambda_names_resolve_as_lambda_resolves_them():
    assert lambda_function_arn("f:warm", None, R, A) == f"arn:aws:lambda:{R}:{A}:function:f:warm"
    assert lambda_function_arn(f"{A}:function:f", None, R, A) == f"arn:aws:lambda:{R}:{A}:function:f"
    full = f"arn:aws:lambda:eu-west-1:{A}:function:f"
    assert lambda_function_arn(full, "1", R, A) == f"{full}:1"


def test_a_vpc_reaches_only_its_endpoints_in_its_region_unless_it_has_a_nat():
    facts = Facts("fn", "us-east-1", f"arn:aws:iam::{A}:role/r", [], [])
    assert facts.reaches("lambda", "eu-west-1")  # no VPC: everything
    facts.vpc_id, facts.endpoints = "vpc-1", {"us-east-1.s3", "us-east-1.states"}
    assert facts.reaches("s3", "us-east-1") and facts.reaches("states", "us-east-1")
    assert not facts.reaches("s3", "eu-west-1") and not facts.reaches("lambda", "us-east-1")
    facts.nat = True
    assert facts.reaches("lambda", "eu-west-1")
    assert Facts.from_dict(facts.to_dict()).to_dict() == facts.to_dict()


def test_the_switch():
    assert parse_modes("off") == {"iam": "off", "network": "off", "limits": "off"}
    assert parse_modes("iam=on,network=report") == {"iam": "on", "network": "report", "limits": "on"}
    assert parse_modes("report,iam=off") == {"iam": "off", "network": "report", "limits": "report"}


class _Client:
    """What the network check reads of a botocore client."""

    class meta:  # noqa: N801
        endpoint_url = "http://127.0.0.1:4566"


def _vpc_guard(tmp_path) -> Guard:
    facts = Facts("fn", "us-east-1", f"arn:aws:iam::{A}:role/r", [], [])
    facts.vpc_id, facts.endpoints = "vpc-1", {"us-east-1.s3", "us-east-1.dynamodb", "us-east-1.lambda"}
    guard = Guard(facts, parse_modes("on"), str(tmp_path), None, 0.0)
    guard.bucket_regions.update({"home": "us-east-1", "eu": "eu-west-1"})
    return guard


def test_a_copy_from_another_regions_bucket_is_refused_through_the_s3_endpoint(tmp_path):
    guard = _vpc_guard(tmp_path)
    guard._network(_Client(), "s3", "CopyObject", {"Bucket": "home", "Key": "k", "CopySource": "home/j"}, R)
    with pytest.raises(EndpointConnectionError, match="eu-west-1"):
        guard._network(
            _Client(),
            "s3",
            "CopyObject",
            {"Bucket": "home", "Key": "k", "CopySource": {"Bucket": "eu", "Key": "j"}},
            R,
        )
    with pytest.raises(EndpointConnectionError, match="states in us-east-1"):
        guard._network(_Client(), "states", "StartExecution", {}, "us-east-1")


def test_a_call_the_reach_function_carries_leaves_as_its_invoke(tmp_path):
    guard = _vpc_guard(tmp_path)
    carried = _Client()
    setattr(carried, REACH_MARKER, "app-Reach")
    guard._network(carried, "s3", "GetObject", {"Bucket": "eu", "Key": "blocks/x"}, "eu-west-1")
    guard._network(carried, "states", "StartExecution", {}, R)
