"""The multi-source fetcher over real HTTP: a dropped connection is sent again, a refusal is not."""

from __future__ import annotations

import os
import socket
import threading
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from hycloud.http import new_session
from hycloud.transfer.coded import Fetcher, plan_queues
from hycloud_core.codec.erasure import decode_chunk

from .test_coded_blocks import REGIONS, MiB, _coded


class _Blocks(ThreadingHTTPServer):
    """Serves blocks by hash; when `flaky`, closes the connection without an answer the first time
    each block is asked for."""

    daemon_threads = True

    def __init__(self, blocks: dict[str, bytes], flaky: bool) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.blocks = blocks
        self.flaky = flaky
        self.asked: set[str] = set()
        self.lock = threading.Lock()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keeps connections alive, as S3 does

    def do_GET(self) -> None:  # noqa: N802
        server: _Blocks = self.server  # type: ignore[assignment]
        key = self.path.strip("/")
        with server.lock:
            drop = server.flaky and key not in server.asked
            server.asked.add(key)
        if drop:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        body = server.blocks[key]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def servers(request) -> Iterator[dict[str, _Blocks]]:
    flaky: set[str] = request.param
    data = os.urandom(6 * MiB)
    layout, blocks = _coded(data, REGIONS)
    running = {r: _Blocks(blocks, r in flaky) for r in REGIONS}
    threads = [
        threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.05}) for s in running.values()
    ]
    for t in threads:
        t.start()
    running["layout"], running["data"] = layout, data  # type: ignore[assignment]
    yield running
    for r in REGIONS:
        running[r].shutdown()
        running[r].server_close()
    for t in threads:
        t.join(10)


def _download(servers: dict, refused: str | None = None) -> tuple[Fetcher, bytes]:
    layout = servers["layout"]
    sessions = {r: new_session() for r in REGIONS}
    ports = {r: servers[r].server_address[1] for r in REGIONS}
    if refused:
        with socket.socket() as probe:  # a port nobody listens on
            probe.bind(("127.0.0.1", 0))
            ports[refused] = probe.getsockname()[1]
    urls = {f"{ci}/{bi}": b.hash for ci, c in enumerate(layout.chunks) for bi, b in enumerate(c.blocks)}

    def get(region: str, key: str) -> requests.Response:
        return sessions[region].get(f"http://127.0.0.1:{ports[region]}/{key}", timeout=(2, 10))

    queues = plan_queues(layout, {})[0]
    fetcher = Fetcher(layout, urls, {r: deque(q) for r, q in queues.items()}, get)
    out: dict[int, bytes] = {}
    fetcher.start(lambda ci, got: out.__setitem__(ci, decode_chunk(got)), 2)
    fetcher.wait()
    assert fetcher.error in (None, "")
    return fetcher, b"".join(out[i] for i in range(len(layout.chunks)))


@pytest.mark.parametrize("servers", [{"eu-west-1"}], indirect=True)
def test_an_instance_that_drops_connections_is_asked_again_not_dropped(servers):
    """eu-west-1 closes the connection the first time each block is asked for: the request is sent
    once more, and the instance serves its share (before, two drops in a row dropped it)."""
    fetcher, got = _download(servers)
    assert got == servers["data"]
    stats = fetcher.stats["eu-west-1"]
    assert fetcher.dead == set() and stats.failed == 0
    assert stats.retried >= 1 and stats.blocks >= 1


@pytest.mark.parametrize("servers", [set()], indirect=True)
def test_a_refused_instance_is_dropped_and_says_why(servers):
    fetcher, got = _download(servers, refused="us-west-2")
    assert got == servers["data"]
    stats = fetcher.stats["us-west-2"]
    assert fetcher.dead == {"us-west-2"} and stats.retried == 0 and stats.blocks == 0
    assert stats.errors and "ConnectionError" in stats.errors[0]
