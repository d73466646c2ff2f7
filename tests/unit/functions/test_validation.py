"""Validation and idempotency of the controller under moto, for inputs the local gateway cannot carry
(lone surrogates in parameters, base64 bodies that are not UTF-8)."""

from __future__ import annotations

import pytest

from tests.unit.functions.test_controller import cloud, ns  # noqa: F401 (cloud: the fixture)


@pytest.mark.parametrize(
    "route,query,code",
    [
        ("/v1/stat", {"path": "/\ud800"}, "invalid-path"),
        ("/v1/dirs", {"cursor": "\udfff"}, "bad-parameter"),
        ("/v1/delta/jobs", {"id": "dl-\ud800"}, "bad-job"),
        ("/v1/relay/data", {"path": "/f", "offset": "1" + "0" * 30, "length": "1"}, "bad-parameter"),
    ],
)
def test_lone_surrogates_and_huge_numbers_in_parameters_are_a_400(cloud, route, query, code):  # noqa: F811
    call, _, _ = cloud
    status, body, _ = call("alice", "GET", route, query=query)
    assert status == 400 and body["error"]["code"] == code


@pytest.mark.parametrize("body", [b"\xff\xfe\x00", b"[" * 100_000, b'{"path": ' + b"{" * 100_000])
def test_undecodable_or_deep_bodies_are_a_400(cloud, body):  # noqa: F811
    call, efs, table = cloud
    status, answer, _ = call("alice", "POST", "/v1/dirs", body=body)
    assert status == 400 and answer["error"]["code"] == "bad-body"
    home = ns(efs, table, "alice")
    assert not home.exists() or not any(home.iterdir())


def test_a_replayed_mkdir_answers_the_first_time_without_running(cloud):  # noqa: F811
    call, efs, table = cloud
    key = {"Idempotency-Key": "k-1"}
    first = call("alice", "POST", "/v1/dirs", body={"path": "/d"}, headers=dict(key))
    (ns(efs, table, "alice") / "d").rmdir()
    again = call("alice", "POST", "/v1/dirs", body={"path": "/d"}, headers=dict(key))
    assert first[:2] == again[:2] and first[0] == 201 and again[2]["idempotent-replayed"] == "true"
    assert not (ns(efs, table, "alice") / "d").exists()
    items = table.query(KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": "IDEM"})["Items"]
    assert [i["status"] for i in items] == ["COMPLETED"] and items[0]["sk"].startswith("controller#")
    other = call("alice", "POST", "/v1/dirs", body={"path": "/e"}, headers=dict(key))
    assert other[0] == 422 and other[1]["error"]["code"] == "idempotency-key-reused"
