"""The controller's request log line and metric under moto: correlation id, user, route, status."""

from __future__ import annotations

import io
import json
import sys

import pytest

from tests.conftest import api_event, load_function

TABLE, BUCKET = "hycloud-test", "hycloud-content"


@pytest.fixture
def call(stores, lambda_context, capsys):
    from hycloud.admin import create_user

    key = create_user(TABLE, "alice")
    handler = load_function("controller")
    logged = io.StringIO()  # the logger's handler keeps the stdout it was made with
    handler.logger.registered_handler.setStream(logged)

    def call(method: str, path: str, headers: dict, **kw) -> tuple[dict, list[dict]]:
        capsys.readouterr()
        logged.seek(0)
        logged.truncate()
        event = api_event(method, path, headers={"authorization": f"Bearer {key}", **headers}, **kw)
        response = handler.handler(event, lambda_context)
        out = logged.getvalue() + capsys.readouterr().out  # log lines, then EMF (printed)
        return response, [json.loads(x) for x in out.splitlines() if x.startswith("{")]

    yield call
    handler.logger.registered_handler.setStream(sys.__stdout__)  # fd 1, which pytest captures


def _request_line(lines: list[dict]) -> dict:
    (line,) = [x for x in lines if x.get("message") == "request"]
    return line


def test_request_line_has_correlation_id_user_route_and_status(call):
    response, lines = call("GET", "/v1/stat", {"X-Correlation-Id": "job-42:step/1"}, query={"path": "/none"})
    assert response["statusCode"] == 404
    assert response["multiValueHeaders"]["X-Correlation-Id"] == ["job-42:step/1"]
    line = _request_line(lines)
    assert (line["correlation_id"], line["route"], line["status"]) == ("job-42:step/1", "GET /v1/stat", 404)
    assert line["user"].startswith("u-")
    (metric,) = [x for x in lines if "_aws" in x and "Requests" in x]
    assert (metric["route"], metric["status"], metric["correlation_id"]) == (
        "GET /v1/stat",
        "404",
        "job-42:step/1",
    )


@pytest.mark.parametrize("sent", ["two words", "x" * 129, "a\nb", "<script>"])
def test_an_id_that_is_not_plain_is_replaced_by_the_request_id(call, sent):
    response, lines = call("GET", "/v1/whoami", {"x-correlation-id": sent})
    assert response["statusCode"] == 200
    request_id = response["multiValueHeaders"]["X-Correlation-Id"][0]
    assert request_id != sent and _request_line(lines)["correlation_id"] == request_id


def test_unmatched_routes_share_one_name_and_validation_failures_keep_theirs(call):
    _, lines = call("GET", "/v1/no/such/thing", {})
    assert (_request_line(lines)["route"], _request_line(lines)["status"]) == ("unmatched", 404)
    _, lines = call("GET", "/v1/stat", {})  # the path parameter is missing
    assert (_request_line(lines)["route"], _request_line(lines)["status"]) == ("GET /v1/stat", 400)


def test_a_try_later_is_answered_with_retry_after_and_not_logged_as_a_failure(call, monkeypatch):
    """A 503 the cloud expects (a job changing under racing requests, a version settling) tells
    the client when to ask again; only a 5xx without that is a failure worth a stack trace."""
    from hycloud_core.errors import TryLaterError
    from hycloud_core.fs.namespace import Namespace

    def busy(self, path):
        raise TryLaterError("the job is changing under concurrent requests; retry")

    monkeypatch.setattr(Namespace, "stat_hashed", busy)
    response, lines = call("GET", "/v1/stat", {}, query={"path": "/f"})
    assert response["statusCode"] == 503 and json.loads(response["body"])["error"]["code"] == "busy"
    assert response["multiValueHeaders"]["Retry-After"] == ["1"]
    assert not [x for x in lines if x.get("message") == "request failed"]
    assert _request_line(lines)["status"] == 503
