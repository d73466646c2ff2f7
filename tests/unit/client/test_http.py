"""The client's HTTP session against a scripted server on loopback: every change carries an
Idempotency-Key, the same on each retry of one operation and new for the next; a change the API
may still be running (502/504) is not retried into its own lease but reported as unknown."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from hycloud import http as http_module
from hycloud.cli import exit_codes
from hycloud.http import Http
from hycloud_core.errors import ConflictError, HyCloudError
from tests.loopback_http import serving


class Scripted:
    """Answers each request with the next status of `script` (then 200); records what came in."""

    def __init__(self) -> None:
        self.script: list[int] = []
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.retry_after = ""  # sent with each 429 when set


@pytest.fixture
def server() -> Iterator[tuple[Scripted, str]]:
    state = Scripted()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            state.seen.append((self.command, dict(self.headers)))
            status = state.script.pop(0) if state.script else 200
            code = "busy" if status == 409 else "ok"
            body = json.dumps({"error": {"code": code, "message": "m"}} if status >= 400 else {"ok": 1})
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            if status == 429 and state.retry_after:
                self.send_header("Retry-After", state.retry_after)
            self.end_headers()
            self.wfile.write(body.encode())

        do_GET = do_POST = do_PUT = do_DELETE = answer

    with serving(Handler) as url:
        yield state, url


def keys(state: Scripted) -> list[str | None]:
    return [headers.get("Idempotency-Key") for _, headers in state.seen]


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_a_retried_change_sends_one_key_and_the_next_change_another(server, method):
    state, url = server
    http = Http(url, "key")
    state.script = [503, 429]
    assert http.json(method, "/v1/copy", json={"src": "/a", "dst": "/b"}) == {"ok": 1}
    first = keys(state)
    assert len(first) == 3 and len(set(first)) == 1 and len(first[0]) == 32 and int(first[0], 16) >= 0
    http.json(method, "/v1/copy", json={"src": "/a", "dst": "/b"})
    assert len(keys(state)) == 4 and keys(state)[3] not in (None, first[0])


def test_reads_carry_no_key_and_are_retried_after_a_gateway_timeout(server):
    state, url = server
    state.script = [504, 502]
    assert Http(url, "key").json("GET", "/v1/stat") == {"ok": 1}
    assert [m for m, _ in state.seen] == ["GET"] * 3 and keys(state) == [None] * 3


@pytest.mark.parametrize("status", [502, 504])
def test_a_change_without_an_answer_is_not_retried_into_its_own_lease(server, status):
    """The first POST is still running and holds the lease: a retry would be answered 409 busy."""
    state, url = server
    state.script = [status, 409]
    with pytest.raises(HyCloudError) as err:
        Http(url, "key").json("POST", "/v1/copy", json={"src": "/a", "dst": "/b"})
    assert len(state.seen) == 1 and not isinstance(err.value, ConflictError)
    assert err.value.code == "outcome-unknown" and "may still complete" in err.value.message
    assert exit_codes.for_error(err.value.code, err.value.status) == exit_codes.OUTCOME_UNKNOWN


def test_a_busy_answer_is_reported_not_retried(server):
    state, url = server
    state.script = [409]
    with pytest.raises(ConflictError) as err:
        Http(url, "key").json("POST", "/v1/move", json={"src": "/a", "dst": "/b"})
    assert err.value.code == "busy" and len(state.seen) == 1


def test_a_caller_given_key_is_kept(server):
    state, url = server
    Http(url, "key").json("POST", "/v1/dirs", json={"path": "/x"}, headers={"Idempotency-Key": "k-1"})
    assert keys(state) == ["k-1"]


def test_a_429_is_retried_after_its_retry_after(server):
    state, base = server
    state.script, state.retry_after = [429], "1"
    started = time.monotonic()
    assert Http(base, "k").json("POST", "/v1/relay", json={}) == {"ok": 1}
    assert 1.0 <= time.monotonic() - started < 5 and len(set(keys(state))) == 1


def test_a_long_retry_after_is_cut_to_the_bound(server, monkeypatch):
    state, base = server
    monkeypatch.setattr(http_module, "MAX_RETRY_AFTER_S", 0.2)
    state.script, state.retry_after = [429, 429], "86400"
    started = time.monotonic()
    assert Http(base, "k").json("GET", "/v1/usage") == {"ok": 1}
    assert time.monotonic() - started < 3
