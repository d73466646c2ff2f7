"""A forward HTTP proxy on loopback that can hold, corrupt or rewrite chosen exchanges.

The real `hycloud` CLI reaches it through HTTP_PROXY, so a test can freeze a transfer at a
known point (hold every part but the first, then press Ctrl-C) or play a faulty network or
middlebox (a body corrupted in transit, an answer rewritten) in front of the real cloud.
Requests and Host headers pass unchanged, so presigned S3 URLs stay valid.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "content-length"}


@dataclass
class Exchange:
    """One request as the client sent it and, once forwarded, the answer it gets."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes
    status: int = 0
    response_headers: dict[str, str] = field(default_factory=dict)
    response_body: bytes = b""

    @property
    def query(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(urlsplit(self.url).query).items()}

    @property
    def route(self) -> str:
        return urlsplit(self.url).path


class FaultProxy:
    """`hold(x)` True: the request is never forwarded. `on_request`/`on_response` may edit `x`."""

    def __init__(
        self,
        hold: Callable[[Exchange], bool] = lambda x: False,
        on_request: Callable[[Exchange], None] = lambda x: None,
        on_response: Callable[[Exchange], None] = lambda x: None,
    ) -> None:
        self.hold, self.on_request, self.on_response = hold, on_request, on_response
        self.forwarded: list[Exchange] = []
        self.released = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def env(self) -> dict[str, str]:
        return {"HTTP_PROXY": self.url, "http_proxy": self.url, "NO_PROXY": "", "no_proxy": ""}

    def __enter__(self) -> FaultProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()

    def forward(self, x: Exchange) -> None:
        parts = urlsplit(x.url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=120)
        try:
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            conn.request(x.method, target, body=x.body or None, headers=x.headers)
            response = conn.getresponse()
            x.status, x.response_body = response.status, response.read()
            x.response_headers = {k: v for k, v in response.getheaders() if k.lower() not in HOP_BY_HOP}
        finally:
            conn.close()


def _handler(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def relay(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            headers["Accept-Encoding"] = "identity"  # answers stay readable for on_response
            x = Exchange(self.command, self.path, headers, self.rfile.read(length))
            if proxy.hold(x):
                proxy.released.wait()
                self.close_connection = True
                return
            proxy.on_request(x)
            proxy.forward(x)
            proxy.on_response(x)
            self.send_response(x.status)
            for name, value in x.response_headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(x.response_body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(x.response_body)
            proxy.forwarded.append(x)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = relay

    return Handler
