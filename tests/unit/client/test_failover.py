"""FailoverHttp with fake controllers: fails over on an unreachable primary, replays what the
standby lacks, and switch-back holds new requests until every earlier one is acknowledged."""

from __future__ import annotations

import threading
import time

import pytest

from hycloud import failover
from hycloud.failover import FailoverHttp
from hycloud_core.errors import HyCloudError


class Response:
    def __init__(self, body: dict) -> None:
        self.body = body

    def json(self) -> dict:
        return self.body


class Fake:
    """A controller: records requests; `down` makes it unreachable; `slow` holds a route."""

    def __init__(self, name: str) -> None:
        self.name, self.base, self.down = name, f"http://{name}", False
        self.log: list[tuple[str, str, float]] = []
        self.slow: dict[str, threading.Event] = {}
        self.leaves: dict[str, str] = {}

    def request(self, method: str, route: str, **kwargs) -> Response:
        if self.down:
            raise HyCloudError("cannot reach", code="unreachable", status=503)
        if route in self.slow:
            self.slow[route].wait(5)
        self.log.append((method, route, time.monotonic()))
        if route == "/v1/merkle/children":
            return Response(
                {
                    p: [
                        {"path": f"{p.rstrip('/')}/{n}", "kind": "file", "hash": h}
                        for n, h in self.leaves.items()
                    ]
                    for p in kwargs["json"]["paths"]
                }
            )
        return Response({"in_step_at": None, "ok": self.name})

    def json(self, method: str, route: str, **kwargs) -> dict:
        return self.request(method, route, **kwargs).json()


@pytest.fixture
def http(monkeypatch, tmp_path) -> FailoverHttp:
    monkeypatch.setattr(failover, "LAG_POLL_S", 3600)
    h = FailoverHttp(
        "http://p", "http://s", "key", probe_s=0, journal=tmp_path / "journal.sqlite3", reconcile=lambda *a: 0
    )
    h.primary, h.standby = Fake("p"), Fake("s")
    return h


def test_an_unreachable_primary_sends_the_request_and_the_journal_to_the_standby(http):
    http.request("PUT", "/v1/files", params={"path": "/a.txt"}, data=b"a")
    http.request("POST", "/v1/dirs", json={"path": "/d"})
    http.primary.down = True
    assert http.json("GET", "/v1/stat", params={"path": "/a.txt"}) == {"in_step_at": None, "ok": "s"}
    assert http.on_standby and http.switches[0]["to"] == "standby" and http.switches[0]["replayed"] == 2
    sent = [(m, r) for m, r, _ in http.standby.log]
    assert sent == [
        ("POST", "/v1/merkle/children"),
        ("PUT", "/v1/files"),
        ("POST", "/v1/dirs"),
        ("GET", "/v1/stat"),
    ]


def test_a_write_the_standby_already_has_is_not_sent_again(http):
    from hycloud_core import content
    from hycloud_core.merkle.hashing import file_hash

    http.request("PUT", "/v1/files", params={"path": "/a.txt"}, data=b"a")
    http.standby.leaves["a.txt"] = file_hash(bytes.fromhex(content.hash_bytes(b"a"))).hex()
    http.primary.down = True
    http.request("GET", "/v1/whoami")
    assert http.switches[0]["replayed"] == 0


def test_switch_back_waits_for_requests_in_flight_and_holds_new_ones(http, monkeypatch):
    reconciled: list[float] = []
    http.reconcile = lambda *a: reconciled.append(time.monotonic()) or 0
    http.primary.down = True
    http.request("GET", "/v1/whoami")
    gate = http.standby.slow["/v1/slow"] = threading.Event()
    slow = threading.Thread(target=http.request, args=("PUT", "/v1/slow"))
    slow.start()
    time.sleep(0.1)
    http.primary.down = False
    later = threading.Thread(target=http.request, args=("PUT", "/v1/files"))
    later.start()  # probes the primary, finds it back, and waits for the slow request
    time.sleep(0.3)
    assert reconciled == [] and not [r for r in http.primary.log if r[1] == "/v1/files"]
    gate.set()
    slow.join(5)
    later.join(5)
    slow_done = next(t for m, r, t in http.standby.log if r == "/v1/slow")
    write_at = next(t for m, r, t in http.primary.log if r == "/v1/files")
    assert slow_done <= reconciled[0] <= write_at
    assert http.switches[-1]["to"] == "primary" and not http.on_standby
    assert ("DELETE", "/v1/replication/diverged") in [(m, r) for m, r, _ in http.standby.log]


def test_only_an_unreachable_primary_or_its_gateway_triggers_failover():
    from hycloud.failover import primary_down

    assert primary_down(HyCloudError("cannot reach", code="unreachable", status=503))
    assert primary_down(HyCloudError("no answer", code="outcome-unknown", status=504))
    assert primary_down(HyCloudError("HTTP 502", status=502))  # the gateway's own body
    assert not primary_down(HyCloudError("busy", code="busy", status=503))  # the controller is up
    assert not primary_down(HyCloudError("bug", status=500))


def test_a_large_upload_in_the_lag_window_is_uploaded_again_to_the_standby(http, monkeypatch, tmp_path):
    from hycloud_core import content

    sent: list[tuple[object, str]] = []
    monkeypatch.setattr(failover, "upload_large", lambda h, local, remote, **kw: sent.append((h, remote)))
    same, changed = tmp_path / "same.bin", tmp_path / "changed.bin"
    same.write_bytes(b"acknowledged")
    changed.write_bytes(b"acknowledged")
    http.request("POST", "/v1/uploads/commit", json={"path": "/same.bin"})  # a step: not journaled alone
    http.uploaded(same, "/same.bin", content.hash_file(same)[0], {})
    http.uploaded(changed, "/changed.bin", content.hash_file(changed)[0], {})
    changed.write_bytes(b"edited since")
    http.primary.down = True
    http.request("GET", "/v1/stat", params={"path": "/x"})
    assert sent == [(http.standby, "/same.bin")]
    assert [why for _, why in http.journal.unreplayable] == [
        "UPLOAD /changed.bin: the local file changed since it was uploaded"
    ]


def test_a_change_the_standby_refuses_is_listed_and_the_rest_still_replayed(http, monkeypatch):
    refusing = http.standby.request

    def request(method, route, **kwargs):
        if route == "/v1/bundles":
            raise HyCloudError("no such staged body", code="bad-request", status=400)
        return refusing(method, route, **kwargs)

    http.request("POST", "/v1/bundles", params={"staged": "x"}, data=b"")
    http.request("POST", "/v1/dirs", json={"path": "/d"})
    monkeypatch.setattr(http.standby, "request", request)
    http.primary.down = True
    http.request("GET", "/v1/whoami")
    assert http.on_standby and ("POST", "/v1/dirs") in [(m, r) for m, r, _ in http.standby.log]
    assert [why for _, why in http.journal.unreplayable] == [
        "POST /v1/bundles: the standby refused it: bad-request"
    ]
    assert http.journal.take() == []  # gone from the journal: the next run does not trip on it
