"""Loopback servers for the WAN link tests: a raw TCP bulk/ping server and a small HTTP server."""

from __future__ import annotations

import contextlib
import hashlib
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench.wan import WanLink

CHUNK = 64 * 1024


def _serve_bulk(conn: socket.socket) -> None:
    """Line commands: P -> one byte back; D<n> -> n bytes back; U<n> -> read n bytes, reply timing."""
    with conn, conn.makefile("rb") as f, contextlib.suppress(ConnectionError):
        for line in f:
            cmd, n = line[:1], int(line[1:].strip() or 0)
            if cmd == b"P":
                conn.sendall(b"p")
            elif cmd == b"D":
                conn.sendall(b"x" * n)
            elif cmd == b"U":
                first = f.read1(min(CHUNK, n))
                start, got = time.perf_counter(), len(first)
                while got < n:
                    got += len(f.read1(min(CHUNK, n - got)))
                conn.sendall(f"{time.perf_counter() - start} {len(first)}\n".encode())


@pytest.fixture
def bulk_server() -> Iterator[tuple[str, int]]:
    listener = socket.create_server(("127.0.0.1", 0))

    def accept_loop() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=_serve_bulk, args=(conn,), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()
    yield listener.getsockname()[:2]
    listener.close()


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
