"""Loopback servers for the WAN link tests: the calibration bulk server and a small HTTP echo server."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench.wan import WanLink
from bench.wan.calibrate import BulkServer


@pytest.fixture
def bulk_server() -> Iterator[tuple[str, int]]:
    with BulkServer() as server:
        yield server.address


class EchoHandler(BaseHTTPRequestHandler):
    """Answers with what arrived: Host header, path and SHA-256 of the body."""

    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        text = f"{self.headers['Host']} {self.path} {hashlib.sha256(body).hexdigest()}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    do_GET = do_PUT = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def http_server() -> Iterator[tuple[str, int]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), EchoHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server.server_address[:2]
    server.shutdown()
    server.server_close()


@pytest.fixture
def make_link() -> Iterator:
    links: list[WanLink] = []

    def make(target: tuple[str, int], kind: type = WanLink, **kwargs) -> WanLink:
        links.append(kind(target, **kwargs).start())
        return links[-1]

    yield make
    for link in links:
        link.close()
