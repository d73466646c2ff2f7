"""GET /v1/users/<name>: whether a user exists (for `hycloud crypt add-user`), told by name only."""

from __future__ import annotations

import json

import pytest
from moto import mock_aws

from tests.conftest import api_event, load_function, make_stores

TABLE = "hycloud-test"


@pytest.fixture
def call(tmp_path, monkeypatch, lambda_context):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("HYCLOUD_TABLE", TABLE)
    monkeypatch.setenv("HYCLOUD_EFS_ROOT", str(tmp_path / "efs"))
    with mock_aws():
        make_stores("hycloud-content", TABLE)
        from hycloud.admin import create_user, users

        key = create_user(TABLE, "alice")
        create_user(TABLE, "bob")
        create_user(TABLE, "carol")
        users(TABLE).set_disabled("carol", True)
        handler = load_function("controller")

        def request(path: str) -> tuple[int, dict]:
            event = api_event("GET", path, headers={"authorization": f"Bearer {key}"})
            resp = handler.handler(event, lambda_context)
            return resp["statusCode"], json.loads(resp["body"])

        yield request


def test_a_known_user_is_answered_by_name_only(call):
    assert call("/v1/users/bob") == (200, {"user": "bob"})


@pytest.mark.parametrize("name,status,code", [("dave", 404, "no-such-user"), ("carol", 404, "no-such-user")])
def test_an_unknown_or_disabled_user_is_not_found(call, name, status, code):
    got, body = call(f"/v1/users/{name}")
    assert got == status and body["error"]["code"] == code


def test_a_name_no_user_can_have_is_a_bad_request(call):
    got, body = call("/v1/users/Bad_Name")
    assert got == 400 and body["error"]["code"] == "bad-user-name"
