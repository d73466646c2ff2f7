"""A stand-in for S3's presigned URLs on 127.0.0.1: each URL carries the time it expires, and a
request that comes later is refused the way S3 refuses it (403 AccessDenied "Request has expired",
or 400 ExpiredToken when the signing session ended), with S3's XML body."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

REQUEST_EXPIRED = (
    403,
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
    b"<Message>Request has expired</Message><X-Amz-Expires>900</X-Amz-Expires>"
    b"<Expires>2024-01-01T00:15:00Z</Expires><ServerTime>2024-01-01T00:20:00Z</ServerTime>"
    b"<RequestId>R</RequestId><HostId>H</HostId></Error>",
)
TOKEN_EXPIRED = (
    400,
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>ExpiredToken</Code>'
    b"<Message>The provided token has expired.</Message><RequestId>R</RequestId></Error>",
)


class FakeS3(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, refusal: tuple[int, bytes] = REQUEST_EXPIRED) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.refusal = refusal
        self.objects: dict[str, bytes] = {}
        self.served: Counter[str] = Counter()  # requests answered (not refused) per key
        self.refused: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.signed = 0

    def url(self, key: str, ttl_s: float = 900) -> str:
        """A URL for `key` valid `ttl_s` more seconds (negative: expired already)."""
        with self.lock:
            self.signed += 1
            n = self.signed
        port = self.server_address[1]
        return f"http://127.0.0.1:{port}/{key}?expires={time.time() + ttl_s:.3f}&n={n}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _key(self) -> str | None:
        """The object's key, or None (and the refusal sent) when the URL expired."""
        server: FakeS3 = self.server  # type: ignore[assignment]
        parts = urlsplit(self.path)
        key = parts.path.strip("/")
        if float(parse_qs(parts.query)["expires"][0]) < time.time():
            with server.lock:
                server.refused[key] += 1
            status, body = server.refusal
            self._answer(status, body)
            return None
        return key

    def do_PUT(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        key = self._key()
        if key is None:
            return
        server: FakeS3 = self.server  # type: ignore[assignment]
        with server.lock:
            server.objects[key] = body
            server.served[key] += 1
        self._answer(200, b"")

    def do_GET(self) -> None:  # noqa: N802
        key = self._key()
        if key is None:
            return
        server: FakeS3 = self.server  # type: ignore[assignment]
        with server.lock:
            server.served[key] += 1
            data = server.objects[key]
        ranged = self.headers.get("Range")
        if ranged:
            start, end = (int(x) for x in ranged.removeprefix("bytes=").split("-"))
            self._answer(206, data[start : end + 1])
        else:
            self._answer(200, data)

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def fake_s3(refusal: tuple[int, bytes] = REQUEST_EXPIRED) -> Iterator[FakeS3]:
    server = FakeS3(refusal)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
