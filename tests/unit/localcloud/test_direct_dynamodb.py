"""Functions' DynamoDB calls signed for DynamoDB Local as LocalStack signs them (direct_dynamodb.py)."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import botocore.auth
import pytest
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

MODULE = (
    Path(__file__).resolve().parents[3]
    / "infra/local/lambda_executor/hycloud_local_lambda/direct_dynamodb.py"
)


@pytest.fixture
def direct(monkeypatch):
    spec = importlib.util.spec_from_file_location("direct_dynamodb_under_test", MODULE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(botocore.auth.SigV4Auth, "add_auth", botocore.auth.SigV4Auth.add_auth)
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "")  # install() sets it: undone after the test
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB")
    return module


def _signed(service: str, region: str) -> str:
    request = AWSRequest(method="POST", url=f"http://127.0.0.1:1/{service}", data=b"{}")
    botocore.auth.SigV4Auth(Credentials("LSIAQAAAAAAAEXAMPLE", "secret"), service, region).add_auth(request)
    return request.headers["Authorization"]


def test_dynamodb_calls_carry_the_account_and_region_key_and_others_are_untouched(direct, monkeypatch):
    monkeypatch.setenv(direct.ENV, json.dumps({"url": "http://localhost:45139", "account": "000000000000"}))
    assert direct.install()
    assert direct.namespace_key("000000000000", "eu-west-1") == "000000000000euwest1"
    assert "Credential=000000000000euwest1/" in _signed("dynamodb", "eu-west-1")
    assert "Credential=000000000000useast1/" in _signed("dynamodb", "us-east-1")
    assert "Credential=LSIAQAAAAAAAEXAMPLE/" in _signed("s3", "eu-west-1")
    assert "Credential=LSIAQAAAAAAAEXAMPLE/" in _signed("dynamodbstreams", "eu-west-1")
    assert os.environ["AWS_ENDPOINT_URL_DYNAMODB"] == "http://localhost:45139"


def test_without_the_executors_word_nothing_changes(direct, monkeypatch):
    monkeypatch.delenv(direct.ENV, raising=False)
    assert not direct.install()
    assert "Credential=LSIAQAAAAAAAEXAMPLE/" in _signed("dynamodb", "eu-west-1")
