"""The client within API Gateway's limits, against a scripted server on loopback: a read-like
POST/PUT left without an answer (504 after 29 s) is sent again like a GET, with the same key; API
Gateway's own answers (413, 504: no controller error body) are reported for what they are; a body
that cannot pass API Gateway and the controller's Lambda event is never sent."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from hycloud import http as http_module
from hycloud.http import Http
from hycloud_core import api_limits
from hycloud_core.auth import READ_LIKE
from hycloud_core.errors import HyCloudError
from tests.conftest import load_function
from tests.loopback_http import serving

GATEWAY = {  # what API Gateway itself answers (no controller error body)
    413: ("application/json", json.dumps({"message": "Request Too Long"})),
    504: ("application/json", json.dumps({"message": "Endpoint request timed out"})),
    4131: ("text; charset=utf-8", "HTTP content length exceeded 10485760 bytes."),
    4090: ("application/json", json.dumps({"error": {"code": "idempotency-key-in-use", "message": "m"}})),
}


class Scripted:
    def __init__(self) -> None:
        self.script: list[int] = []
        self.seen: list[tuple[str, str, dict[str, str], int]] = []


@pytest.fixture
def server(monkeypatch) -> Iterator[tuple[Scripted, str]]:
    monkeypatch.setattr(http_module, "READ_LIKE_BACKOFF_S", 0.01)
    state = Scripted()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            state.seen.append((self.command, self.path, dict(self.headers), length))
            status = state.script.pop(0) if state.script else 200
            content_type, body = GATEWAY.get(status, ("application/json", json.dumps({"ok": 1})))
            self.send_response({4131: 413, 4090: 409}.get(status, status))
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        do_GET = do_POST = do_PUT = do_DELETE = answer

    with serving(Handler) as url:
        yield state, url


@pytest.mark.parametrize("method,route", sorted(READ_LIKE))
def test_a_read_like_change_is_sent_again_after_a_gateway_timeout(server, method, route):
    state, url = server
    state.script = [504, 502]
    assert Http(url, "key").json(method, route, json={"path": "/a"}) == {"ok": 1}
    sent_keys = [headers.get("Idempotency-Key") for _, _, headers, _ in state.seen]
    assert len(sent_keys) == 3 and len(set(sent_keys)) == 1 and sent_keys[0]


def test_a_read_like_change_still_unanswered_is_reported_unknown(server):
    state, url = server
    state.script = [504] * (http_module.READ_LIKE_RETRIES + 1)
    with pytest.raises(HyCloudError) as err:
        Http(url, "key").json("POST", "/v1/relay", json={"path": "/a"})
    assert err.value.code == "outcome-unknown" and len(state.seen) == http_module.READ_LIKE_RETRIES + 1


def test_a_read_held_past_the_gateways_timeout_is_retried_and_then_reported(server):
    state, url = server
    state.script = [504] * 10
    with pytest.raises(HyCloudError) as err:
        Http(url, "key", retries=1).json("GET", "/v1/relay", params={"path": "/a", "wait": 20})
    assert len(state.seen) == 2 and err.value.status == 504 and err.value.code == "http-error"
    assert "Endpoint request timed out" in err.value.message and "29 s" in err.value.message


@pytest.mark.parametrize("status,said", [(413, "Request Too Long"), (4131, "HTTP content length exceeded")])
def test_api_gateways_413_is_reported_as_a_request_too_large(server, status, said):
    state, url = server
    state.script = [status]
    with pytest.raises(HyCloudError) as err:
        Http(url, "key").request("PUT", "/v1/files", params={"path": "/a"}, data=b"x")
    assert err.value.status == 413 and err.value.code == "request-too-large"
    assert said in err.value.message and str(api_limits.GATEWAY_BODY_LIMIT) in err.value.message


def test_a_body_over_api_gateways_limit_is_not_sent(server):
    state, url = server
    body = b"x" * (api_limits.GATEWAY_BODY_LIMIT + 1)
    with pytest.raises(HyCloudError) as err:
        Http(url, "key").request("PUT", "/v1/files", data=body, headers={"Content-Type": "text/plain"})
    assert err.value.status == 413 and err.value.code == "request-too-large" and state.seen == []


def test_a_binary_body_whose_base64_overflows_the_lambda_event_is_not_sent(server):
    state, url = server
    octet = {"Content-Type": "application/octet-stream"}
    too_big = b"\0" * (5 * 1024 * 1024)  # 6.67 MiB as base64 in the event
    with pytest.raises(HyCloudError) as err:
        Http(url, "key").request("PUT", "/v1/files", params={"path": "/a"}, data=too_big, headers=octet)
    assert err.value.code == "request-too-large" and "Lambda" in err.value.message and state.seen == []
    fits = b"\0" * (4 * 1024 * 1024)  # the largest body the client sends (delta, bundle): 5.33 MiB
    Http(url, "key").request("PUT", "/v1/files", params={"path": "/a"}, data=fits, headers=octet)
    assert [length for *_, length in state.seen] == [len(fits)]


def test_a_json_body_too_large_for_the_event_is_not_sent(server):
    state, url = server
    paths = [f"/{'d' * 4000}/{i}" for i in range(1700)]  # 6.8 MB of JSON
    with pytest.raises(HyCloudError) as err:
        Http(url, "key").json("POST", "/v1/merkle/children", json={"paths": paths})
    assert err.value.code == "request-too-large" and state.seen == []


def test_the_bodies_the_client_sends_by_design_fit():
    from hycloud.transfer import delta
    from hycloud_core import bundle
    from hycloud_core.config import InstanceConfig

    for size in (delta.MAX_DELTA_BODY, bundle.MAX_BODY, InstanceConfig().small_file_threshold):
        assert api_limits.refusal(b"\0" * size, binary=True) is None, size
    assert api_limits.refusal(b"\0" * (api_limits.GATEWAY_BODY_LIMIT + 1), binary=True)


def test_every_read_like_post_is_idempotent_by_itself_for_the_controller(monkeypatch):
    """Repeated without a replay record behind it: the controller exempts it from key replay."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    load_function("controller")
    idempotency = sys.modules["idempotency"]
    for method, route in READ_LIKE:
        assert method != "POST" or not idempotency.covers(method, route), route


def test_a_retry_told_the_first_attempt_still_runs_asks_again(server):
    """PUT /v1/delta/download honours its key: a retry meeting the first attempt still running is
    answered 409 idempotency-key-in-use, then the first one's answer once it is done."""
    state, url = server
    state.script = [504, 4090]
    assert Http(url, "key").json("PUT", "/v1/delta/download", data=b"sig") == {"ok": 1}
    assert len(state.seen) == 3


def test_a_retry_waits_out_a_first_attempt_that_runs_long(server):
    """The first attempt may run up to the controller's 29 s: a retry told it still runs keeps
    asking (not counted as a retry) until its answer is stored, instead of giving up after 3."""
    state, url = server
    state.script = [504] + [4090] * 8
    assert Http(url, "key").json("POST", "/v1/relay", json={"path": "/a"}) == {"ok": 1}
    assert len(state.seen) == 10 and len({h.get("Idempotency-Key") for _, _, h, _ in state.seen}) == 1


def test_a_first_attempt_still_running_past_the_wait_is_reported(server, monkeypatch):
    monkeypatch.setattr(http_module, "KEY_IN_USE_WAIT_S", 0.0)
    state, url = server
    state.script = [504] + [4090] * 8
    with pytest.raises(HyCloudError) as err:
        Http(url, "key").json("POST", "/v1/relay", json={"path": "/a"})
    assert err.value.status == 409 and len(state.seen) == 1 + http_module.READ_LIKE_RETRIES
