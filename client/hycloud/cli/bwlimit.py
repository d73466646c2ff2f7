"""`--bwlimit RATE`: the bytes every session of this run sends and receives, together, kept under
RATE per second (as rclone's --bwlimit), for the API and presigned S3 alike.

It is installed as a session hook (`http.SESSION_HOOKS`), so no transfer code knows of it: each
session's adapters are wrapped so that a request body is read out through a shared token bucket
(the length stays declared: S3's presigned PUTs need it) and a response body is read through it
too. A burst of one second's worth passes at once; past that, readers wait their turn.
"""

from __future__ import annotations

import io
import re
import threading
import time
from typing import Any

import requests
from requests.adapters import BaseAdapter

from hycloud_core.errors import BadRequestError

from .. import http

UNITS = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
PIECE = 64 * 1024  # bytes taken from the bucket at a time


def parse_rate(text: str) -> float:
    """'10M' -> 10 MiB/s, '512K', '1.5M', '2G', or plain bytes per second; 'off' or '0' -> 0."""
    if text.strip().lower() in ("off", "0"):
        return 0.0
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([BKMG]?)(?:i?B)?(?:/s)?\s*", text, re.IGNORECASE)
    if not match or float(match.group(1)) <= 0:
        raise BadRequestError(
            f"--bwlimit {text!r}: a rate such as 512K, 10M or 1.5G (bytes/s)", code="bad-usage"
        )
    return float(match.group(1)) * UNITS[match.group(2).upper()]


class TokenBucket:
    """Bytes per second for all threads together; `take(n)` waits until n bytes may pass."""

    def __init__(self, rate: float, clock=time.monotonic, sleep=time.sleep) -> None:
        self.rate, self.clock, self.sleep = rate, clock, sleep
        self.capacity = rate  # one second's worth may pass at once
        self.tokens, self.at = rate, clock()
        self.lock = threading.Lock()

    def take(self, n: int) -> None:
        with self.lock:
            now = self.clock()
            self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
            self.at = now
            self.tokens -= n
            wait = -self.tokens / self.rate if self.tokens < 0 else 0.0
        if wait > 0:
            self.sleep(wait)


class ThrottledBody(io.BytesIO):
    """A request body read out through the bucket; seekable, so a retry sends it again."""

    def __init__(self, data: bytes, bucket: TokenBucket) -> None:
        super().__init__(data)
        self.bucket = bucket

    def read(self, size: int | None = -1) -> bytes:
        size = PIECE if size is None or size < 0 or size > PIECE else size
        data = super().read(size)
        self.bucket.take(len(data))
        return data


class ThrottledRaw:
    """A response's raw stream whose reads go through the bucket; everything else passes."""

    def __init__(self, raw: Any, bucket: TokenBucket) -> None:
        self._raw, self._bucket = raw, bucket

    def stream(self, amt: int = PIECE, decode_content: bool | None = None):
        for chunk in self._raw.stream(min(amt or PIECE, PIECE), decode_content=decode_content):
            self._bucket.take(len(chunk))
            yield chunk

    def read(self, amt: int | None = None, *args: Any, **kwargs: Any) -> bytes:
        data = self._raw.read(amt, *args, **kwargs)
        self._bucket.take(len(data))
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class ThrottledAdapter(BaseAdapter):
    """Wraps a session's adapter: bodies both ways through the bucket."""

    def __init__(self, inner: BaseAdapter, bucket: TokenBucket) -> None:
        super().__init__()
        self.inner, self.bucket = inner, bucket

    # every argument goes on to the inner adapter unchanged
    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        if isinstance(request.body, bytes | bytearray) and request.body:
            request.headers["Content-Length"] = str(len(request.body))
            request.body = ThrottledBody(bytes(request.body), self.bucket)
        response = self.inner.send(request, **kwargs)
        response.raw = ThrottledRaw(response.raw, self.bucket)
        return response

    def close(self) -> None:
        self.inner.close()


_INSTALLED: list = []  # this module's hook in http.SESSION_HOOKS, if any


def install(rate: float) -> TokenBucket | None:
    """Limit every session made from now on to `rate` bytes/s (shared), in place of any earlier
    limit; none when rate is 0."""
    for hook in _INSTALLED:
        http.SESSION_HOOKS.remove(hook)
    _INSTALLED.clear()
    if rate <= 0:
        return None
    bucket = TokenBucket(rate)

    def throttle(session: requests.Session) -> None:
        for prefix, adapter in list(session.adapters.items()):
            session.mount(prefix, ThrottledAdapter(adapter, bucket))

    http.SESSION_HOOKS.append(throttle)
    _INSTALLED.append(throttle)
    return bucket
