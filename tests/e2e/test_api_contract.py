"""Idempotency-Key against the deployment: a retried mutating request gets the first answer and
changes nothing more; different keys, other users and requests without a key behave as usual."""

from __future__ import annotations

import hashlib
import json
import os
import uuid

import pytest
import requests

pytestmark = pytest.mark.e2e


def _post(user, route: str, body: dict, key: str | None) -> requests.Response:
    headers = {"Authorization": f"Bearer {user.key}"}
    if key is not None:
        headers["Idempotency-Key"] = key
    return requests.post(f"{user.deployment.api_url}{route}", json=body, headers=headers, timeout=60)


def _records_holding(deployment, body: bytes) -> list[dict]:
    """Idempotency records (pk IDEM) whose stored answer is exactly `body`."""
    ddb, found, kwargs = deployment.client("dynamodb"), [], {}
    while True:
        page = ddb.query(
            TableName=deployment.outputs["TableName"],
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": "IDEM"}},
            ConsistentRead=True,
            **kwargs,
        )
        for item in page["Items"]:
            data = json.loads(item.get("data", {}).get("S", "null") or "null")
            if data and data["body"].encode() == body:
                found.append(item)
        if "LastEvaluatedKey" not in page:
            return found
        kwargs = {"ExclusiveStartKey": page["LastEvaluatedKey"]}


@pytest.fixture
def tree(alice) -> str:
    root = f"/idem-{uuid.uuid4().hex[:8]}"
    alice.sdk().mkdir(root)
    alice.sdk().put_bytes(f"{root}/a", b"version one")
    return root


def test_a_retried_copy_answers_as_the_first_time_and_copies_nothing(deployment, alice, tree):
    key = str(uuid.uuid4())
    pair = {"src": f"{tree}/a", "dst": f"{tree}/b"}
    first = _post(alice, "/v1/copy", pair, key)
    assert first.status_code == 201 and first.json()["path"] == f"{tree}/b"
    alice.sdk().put_bytes(f"{tree}/a", b"version two, longer")
    alice.sdk().rm(f"{tree}/b")

    retry = _post(alice, "/v1/copy", pair, key)
    assert (retry.status_code, retry.content) == (first.status_code, first.content)
    assert retry.headers.get("Idempotent-Replayed") == "true"
    assert alice.cli("stat", f"{tree}/b", check=False).returncode == 5  # not copied again
    [record] = _records_holding(deployment, first.content)
    assert record["status"]["S"] == "COMPLETED" and int(record["expiration"]["N"]) > 0


def test_a_new_key_runs_the_request_again(alice, tree):
    pair = {"src": f"{tree}/a", "dst": f"{tree}/b"}
    assert _post(alice, "/v1/copy", pair, str(uuid.uuid4())).status_code == 201
    new = os.urandom(1000)
    alice.sdk().put_bytes(f"{tree}/a", new)
    again = _post(alice, "/v1/copy", pair, str(uuid.uuid4()))
    assert again.status_code == 201 and "Idempotent-Replayed" not in again.headers
    assert hashlib.sha256(alice.sdk().get_bytes(f"{tree}/b")).digest() == hashlib.sha256(new).digest()


def test_a_key_reused_for_another_request_is_refused(alice, tree):
    key = str(uuid.uuid4())
    assert _post(alice, "/v1/copy", {"src": f"{tree}/a", "dst": f"{tree}/b"}, key).status_code == 201
    other = _post(alice, "/v1/copy", {"src": f"{tree}/a", "dst": f"{tree}/c"}, key)
    assert other.status_code == 422 and other.json()["error"]["code"] == "idempotency-key-reused"
    assert alice.cli("stat", f"{tree}/c", check=False).returncode == 5


def test_without_a_key_a_retried_move_runs_twice(alice, tree):
    pair = {"src": f"{tree}/a", "dst": f"{tree}/moved"}
    assert _post(alice, "/v1/move", pair, None).status_code == 200
    assert _post(alice, "/v1/move", pair, None).status_code == 404


def test_with_a_key_a_retried_move_succeeds_once(alice, tree):
    key, pair = str(uuid.uuid4()), {"src": f"{tree}/a", "dst": f"{tree}/moved"}
    first = _post(alice, "/v1/move", pair, key)
    retry = _post(alice, "/v1/move", pair, key)
    assert first.status_code == 200 and (retry.status_code, retry.content) == (200, first.content)
    assert alice.sdk().get_bytes(f"{tree}/moved") == b"version one"


def test_a_failed_attempt_is_not_kept(alice, tree):
    key, pair = str(uuid.uuid4()), {"src": f"{tree}/later", "dst": f"{tree}/moved"}
    assert _post(alice, "/v1/move", pair, key).status_code == 404
    alice.sdk().put_bytes(f"{tree}/later", b"now here")
    retry = _post(alice, "/v1/move", pair, key)
    assert retry.status_code == 200 and "Idempotent-Replayed" not in retry.headers


def test_two_users_with_the_same_key_do_not_share_answers(alice, bob):
    key, path = str(uuid.uuid4()), f"/same-{uuid.uuid4().hex[:8]}"
    mine = _post(alice, "/v1/dirs", {"path": path}, key)
    theirs = _post(bob, "/v1/dirs", {"path": path}, key)
    assert (mine.status_code, theirs.status_code) == (201, 201)
    assert "Idempotent-Replayed" not in theirs.headers
    assert bob.sdk().stat(path)["type"] == "dir"


@pytest.mark.parametrize("key", ["x" * 256, "has space"])
def test_a_malformed_key_is_a_400(alice, tree, key):
    response = _post(alice, "/v1/dirs", {"path": f"{tree}/d"}, key)
    assert response.status_code == 400 and response.json()["error"]["code"] == "bad-idempotency-key"
