"""`--bwlimit`: one token bucket for every session of a run, request and response bodies alike,
through a real HTTP exchange with a server on 127.0.0.1 (the waits recorded, not slept)."""

from __future__ import annotations

import hashlib
from http.server import BaseHTTPRequestHandler

import pytest

from hycloud import http
from hycloud.cli import bwlimit
from hycloud_core.errors import BadRequestError
from tests.loopback_http import serving

KiB = 1024


class Clock:
    """A clock that moves only when slept on: the bucket's waits, added up."""

    def __init__(self) -> None:
        self.now, self.slept = 0.0, 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        ("512K", 512 * KiB),
        ("10M", 10 * KiB**2),
        ("1.5G", 1.5 * KiB**3),
        ("2MiB/s", 2 * KiB**2),
        ("800", 800),
        ("off", 0),
    ],
)
def test_rates_read_as_rclone_writes_them(text, rate):
    assert bwlimit.parse_rate(text) == rate


@pytest.mark.parametrize("text", ["fast", "-1M", "10X", ""])
def test_a_rate_that_is_not_one_is_a_usage_error(text):
    with pytest.raises(BadRequestError):
        bwlimit.parse_rate(text)


def test_the_bucket_lets_one_seconds_worth_through_then_paces():
    clock = Clock()
    bucket = bwlimit.TokenBucket(100 * KiB, clock=clock, sleep=clock.sleep)
    for _ in range(10):
        bucket.take(30 * KiB)  # 300 KiB: 100 at once, 200 more at 100 KiB/s
    assert clock.slept == pytest.approx(2.0, abs=0.01)


class Echo(BaseHTTPRequestHandler):
    """PUT: answers the sha256 of the body; GET: answers 200 KiB of known bytes."""

    BODY = bytes(range(256)) * 800

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self._answer(hashlib.sha256(body).hexdigest().encode())

    def do_GET(self) -> None:
        self._answer(self.BODY)

    def _answer(self, data: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    with serving(Echo) as url:
        yield url


def test_sessions_send_and_receive_through_one_bucket_with_bodies_intact(server, monkeypatch):
    monkeypatch.setattr(http, "SESSION_HOOKS", [])
    bucket = bwlimit.install(100 * KiB)
    clock = Clock()
    bucket.clock, bucket.sleep, bucket.at = clock, clock.sleep, 0.0
    try:
        up, down = http.new_session(), http.new_session(retries=2)
        body = bytes(range(256)) * 1200  # 300 KiB
        answer = up.put(f"{server}/x", data=body, timeout=10)
        assert answer.text == hashlib.sha256(body).hexdigest()
        assert down.get(f"{server}/y", timeout=10).content == Echo.BODY  # 200 KiB more
    finally:
        bwlimit.install(0)
    # 500 KiB (and a few answer bytes) through 100 KiB/s, the first 100 KiB at once: about 4 s
    assert clock.slept == pytest.approx(4.0, abs=0.05)
    assert http.SESSION_HOOKS == []
