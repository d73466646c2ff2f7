"""The local cloud's IAM evaluator against AWS's documented evaluation order and matching rules."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "infra/local/lambda_executor"))

from hycloud_local_lambda.iam_policy import ALLOW, DENY, IMPLICIT_DENY, Request, evaluate, wildcard_match

BUCKET = "arn:aws:s3:::data-bucket"


def policy(*statements: dict) -> dict:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def allow(action, resource, **extra) -> dict:
    return {"Effect": "Allow", "Action": action, "Resource": resource, **extra}


def deny(action, resource, **extra) -> dict:
    return {"Effect": "Deny", "Action": action, "Resource": resource, **extra}


def test_nothing_applies_is_an_implicit_deny():
    decision = evaluate(
        Request("s3:PutObject", f"{BUCKET}/k"), [policy(allow("s3:GetObject", f"{BUCKET}/*"))]
    )
    assert decision.result == IMPLICIT_DENY and not decision.allowed


def test_an_allow_allows():
    assert evaluate(
        Request("s3:GetObject", f"{BUCKET}/a/b"), [policy(allow("s3:GetObject", f"{BUCKET}/*"))]
    ).allowed


def test_an_explicit_deny_wins_over_any_allow_in_any_policy():
    docs = [policy(allow("s3:*", "*")), policy(deny("s3:Delete*", f"{BUCKET}/*"))]
    assert evaluate(Request("s3:DeleteObject", f"{BUCKET}/k"), docs).result == DENY
    assert evaluate(Request("s3:GetObject", f"{BUCKET}/k"), docs).result == ALLOW


def test_actions_match_case_insensitively_with_wildcards():
    doc = policy(allow(["S3:getobject*", "dynamodb:?etItem"], "*"))
    assert evaluate(Request("s3:GetObjectTagging", "x"), [doc]).allowed
    assert evaluate(Request("dynamodb:GetItem", "x"), [doc]).allowed
    assert not evaluate(Request("dynamodb:BatchGetItem", "x"), [doc]).allowed


def test_resources_match_case_sensitively_and_star_spans_slashes():
    doc = policy(allow("s3:GetObject", f"{BUCKET}/blocks/*"))
    assert evaluate(Request("s3:GetObject", f"{BUCKET}/blocks/a/b/c"), [doc]).allowed
    assert not evaluate(Request("s3:GetObject", f"{BUCKET}/Blocks/a"), [doc]).allowed
    # the bucket ARN itself is not an object ARN: ListBucket on "bucket/*" does not allow
    assert not evaluate(
        Request("s3:ListBucket", BUCKET), [policy(allow("s3:ListBucket", f"{BUCKET}/*"))]
    ).allowed


def test_a_star_ending_an_arn_segment_spans_colons_one_inside_a_segment_does_not():
    table = "arn:aws:dynamodb:us-west-2:123456789012:table/T"
    assert evaluate(
        Request("dynamodb:PutItem", table), [policy(allow("dynamodb:PutItem", "arn:aws:dynamodb:*:table/T"))]
    ).allowed
    inner = policy(allow("dynamodb:PutItem", "arn:aws:dynamodb:us-*2:table/T"))
    assert not evaluate(Request("dynamodb:PutItem", table), [inner]).allowed
    assert evaluate(
        Request("dynamodb:PutItem", "arn:aws:dynamodb:us-west-2:1:table/T"),
        [policy(allow("dynamodb:PutItem", "arn:aws:dynamodb:us-*2:1:table/T"))],
    ).allowed


def test_not_action_and_not_resource():
    doc = policy({"Effect": "Allow", "NotAction": "s3:Delete*", "NotResource": f"{BUCKET}/private/*"})
    assert evaluate(Request("s3:GetObject", f"{BUCKET}/k"), [doc]).allowed
    assert not evaluate(Request("s3:DeleteObject", f"{BUCKET}/k"), [doc]).allowed
    assert not evaluate(Request("s3:GetObject", f"{BUCKET}/private/k"), [doc]).allowed


def test_conditions_all_blocks_and_keys_must_hold_any_value_may_match():
    cond = {"StringEquals": {"aws:ResourceAccount": ["111", "222"]}, "Bool": {"aws:SecureTransport": "true"}}
    doc = policy(allow("s3:GetObject", "*", Condition=cond))
    ok = {"aws:ResourceAccount": "222", "aws:SecureTransport": True}
    assert evaluate(Request("s3:GetObject", "x", ok), [doc]).allowed
    assert not evaluate(Request("s3:GetObject", "x", {**ok, "aws:ResourceAccount": "333"}), [doc]).allowed
    assert not evaluate(Request("s3:GetObject", "x", {"aws:ResourceAccount": "222"}), [doc]).allowed


def test_condition_keys_are_case_insensitive_and_absent_keys_fail_unless_if_exists():
    doc = policy(allow("s3:GetObject", "*", Condition={"StringEquals": {"AWS:resourceaccount": "111"}}))
    assert evaluate(Request("s3:GetObject", "x", {"aws:ResourceAccount": "111"}), [doc]).allowed
    assert not evaluate(Request("s3:GetObject", "x", {}), [doc]).allowed
    doc = policy(allow("s3:GetObject", "*", Condition={"StringEqualsIfExists": {"s3:prefix": "a/"}}))
    assert evaluate(Request("s3:GetObject", "x", {}), [doc]).allowed


def test_the_secure_transport_deny_of_a_bucket_policy_does_not_bite_over_https():
    bucket_policy = policy(
        {"Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "s3:*", "Resource": [BUCKET, f"{BUCKET}/*"],
         "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
    )  # fmt: skip
    role = "arn:aws:iam::111:role/r"
    request = Request("s3:GetObject", f"{BUCKET}/k", {"aws:SecureTransport": True}, principal=role)
    assert evaluate(request, [policy(allow("s3:GetObject", "*"))], [bucket_policy]).allowed
    plain = Request("s3:GetObject", f"{BUCKET}/k", {"aws:SecureTransport": False}, principal=role)
    assert evaluate(plain, [policy(allow("s3:GetObject", "*"))], [bucket_policy]).result == DENY


def test_a_resource_policy_allow_counts_only_for_its_principal():
    role = "arn:aws:iam::111:role/r"
    mine = policy(allow("s3:GetObject", f"{BUCKET}/*", Principal={"AWS": role}))
    other = policy(allow("s3:GetObject", f"{BUCKET}/*", Principal={"AWS": "arn:aws:iam::111:role/other"}))
    assert evaluate(Request("s3:GetObject", f"{BUCKET}/k", principal=role), [], [mine]).allowed
    assert not evaluate(Request("s3:GetObject", f"{BUCKET}/k", principal=role), [], [other]).allowed


def test_null_negated_and_unknown_operators():
    null = policy(allow("s3:GetObject", "*", Condition={"Null": {"aws:TokenIssueTime": "false"}}))
    assert evaluate(Request("s3:GetObject", "x", {"aws:TokenIssueTime": "t"}), [null]).allowed
    assert not evaluate(Request("s3:GetObject", "x", {}), [null]).allowed
    negated = policy(allow("s3:GetObject", "*", Condition={"StringNotEquals": {"aws:ResourceAccount": "9"}}))
    assert evaluate(Request("s3:GetObject", "x", {"aws:ResourceAccount": "1"}), [negated]).allowed
    assert not evaluate(Request("s3:GetObject", "x", {"aws:ResourceAccount": "9"}), [negated]).allowed
    unknown = policy(allow("s3:GetObject", "*", Condition={"DateGreaterThan": {"aws:CurrentTime": "2020"}}))
    assert not evaluate(Request("s3:GetObject", "x", {"aws:CurrentTime": "2030"}), [unknown]).allowed


def test_wildcards_are_only_star_and_question_mark():
    assert wildcard_match("a[b]*", "a[b]c")
    assert not wildcard_match("a[b]*", "abc")
    assert wildcard_match("arn:aws:s3:::b-?", "arn:aws:s3:::b-1")
