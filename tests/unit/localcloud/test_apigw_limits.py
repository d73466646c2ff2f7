"""The local cloud's API Gateway limits without LocalStack: event sizes as AWS builds them, the
integration timeout (the caller answered, the invocation left running), the `limits` switch and
the records a refusal leaves (infra/local/lambda_executor/hycloud_local_lambda/apigw_limits.py)."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "infra/local/lambda_executor"))

from hycloud_local_lambda import apigw_limits  # noqa: E402


class TimedOut(Exception):
    pass


class TooLong(Exception):
    pass


@pytest.fixture
def state(tmp_path, monkeypatch):
    """A state folder whose settings say `limits=on`; gateway exceptions stood in for."""
    monkeypatch.setenv("HYCLOUD_LOCALCLOUD", str(tmp_path))
    monkeypatch.delenv("HYCLOUD_LOCAL_ENFORCE", raising=False)
    (tmp_path / "guard").mkdir()
    (tmp_path / "guard" / "settings.json").write_text(json.dumps({"enforce": "iam=on,limits=on"}))
    monkeypatch.setattr(apigw_limits, "_LEDGER", None)
    monkeypatch.setattr(apigw_limits, "_timed_out", TimedOut)
    monkeypatch.setattr(apigw_limits, "_request_too_long", TooLong)
    monkeypatch.setattr(apigw_limits, "is_binary", lambda context: context.binary)
    return tmp_path


def enforce(state: Path, text: str) -> None:
    (state / "guard" / "settings.json").write_text(json.dumps({"enforce": text}))


def context(timeout_ms: int | None = None, body: bytes = b"", binary: bool = True) -> SimpleNamespace:
    integration = {"uri": "arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/"
                   "arn:aws:lambda:us-east-1:000000000000:function:Controller-1/invocations"}  # fmt: skip
    if timeout_ms is not None:
        integration["timeoutInMillis"] = timeout_ms
    return SimpleNamespace(
        integration=integration,
        invocation_request={"http_method": "PUT", "path": "/v1/files"},
        integration_request={"body": body},
        resource={"path": "/{proxy+}"},
        region="us-east-1",
        api_id="abc123",
        binary=binary,
    )


def refusals(state: Path) -> list[dict]:
    path = state / "guard" / "refused.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_binary_body_counts_as_its_base64_and_text_as_escaped_json():
    assert apigw_limits.body_size(b"\0" * 3 * 1000, binary=True) == 4 * 1000
    assert apigw_limits.body_size(b'{"a": 1}', binary=False) == len(json.dumps('{"a": 1}'))
    assert apigw_limits.body_size(b"\xff\xfe", binary=False) == 4  # not UTF-8: base64 as AWS sends it
    event = {"headers": {"a": "b"}, "body": "ignored", "isBase64Encoded": True}
    rest = len(json.dumps({**event, "body": None}))
    assert apigw_limits.event_size(event, b"\0" * 6, binary=True) == rest + 8


def test_the_timeout_is_the_integrations_or_29_s():
    assert apigw_limits.timeout_s(None) == 29.0
    assert apigw_limits.timeout_s({"timeoutInMillis": 5000}) == 5.0
    assert apigw_limits.timeout_s({"timeoutInMillis": "bad"}) == 29.0
    assert apigw_limits.function_of(context().integration["uri"]) == "Controller-1"


def test_an_integration_that_answers_in_time_is_passed_through(state):
    invoke = apigw_limits.timed(lambda self, ctx: "answer")
    assert invoke(None, context(timeout_ms=1000)) == "answer"
    assert refusals(state) == []


def test_an_integration_past_its_timeout_is_answered_and_left_running(state):
    finished = threading.Event()

    def slow(self, ctx):
        time.sleep(0.6)
        finished.set()
        return "late"

    started = time.monotonic()
    with pytest.raises(TimedOut):
        apigw_limits.timed(slow)(None, context(timeout_ms=200))
    assert 0.2 <= time.monotonic() - started < 0.5 and not finished.is_set()
    assert finished.wait(2)  # the invocation ran on to its end
    (record,) = refusals(state)
    assert record["kind"] == "limits" and record["service"] == "apigateway" and record["enforced"] is True
    assert record["status"] == 504 and record["function"] == "Controller-1"
    assert record["operation"] == "PUT /v1/files" and record["error"] == "Endpoint request timed out"


def test_in_report_mode_the_late_answer_goes_through_and_is_logged(state):
    enforce(state, "limits=report")

    def slow(self, ctx):
        time.sleep(0.3)
        return "late"

    assert apigw_limits.timed(slow)(None, context(timeout_ms=100)) == "late"
    (record,) = refusals(state)
    assert record["enforced"] is False and record["seconds"] >= 0.3


def test_with_limits_off_nothing_is_checked(state):
    enforce(state, "limits=off")
    create = apigw_limits.checked_event(lambda self, ctx: {"body": "x"})
    assert create(None, context(body=b"\0" * (7 * 1024 * 1024))) == {"body": "x"}
    assert refusals(state) == []


def test_an_event_over_lambdas_limit_is_refused_before_the_function_runs(state):
    create = apigw_limits.checked_event(lambda self, ctx: {"headers": {}, "body": "…"})
    fits = b"\0" * (4 * 1024 * 1024)
    assert create(None, context(body=fits)) == {"headers": {}, "body": "…"}
    with pytest.raises(TooLong):
        create(None, context(body=b"\0" * (5 * 1024 * 1024)))  # 6.7 MiB as base64
    (record,) = refusals(state)
    assert record["status"] == 413 and record["bytes"] > apigw_limits.LAMBDA_REQUEST_LIMIT


def test_a_body_over_10_mib_is_answered_413_as_text(state):
    answered = {}
    chain = SimpleNamespace(respond=lambda status, body, headers: answered.update(status=status, body=body))
    handler = apigw_limits.BodyLimitHandler()
    request = context()
    request.invocation_request["body"] = b"\0" * apigw_limits.BODY_LIMIT
    handler(chain, request, None)
    assert answered == {}
    request.invocation_request["body"] += b"\0"
    handler(chain, request, None)
    assert answered == {"status": 413, "body": "HTTP content length exceeded 10485760 bytes."}
    apigw_limits.ledger().flush()
    counts = json.loads(next((state / "guard").glob("counts-apigateway-*.json")).read_text())
    assert counts["checked"] == 2 and counts["refused"] == 1 and counts["reported"] == 0
