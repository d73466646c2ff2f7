"""HTTP plumbing: one session with retries on transient failures, and errors mapped to exceptions.

Every change (POST, PUT, DELETE) carries an `Idempotency-Key`: one random key per operation,
the same on each retry of it, so the API can answer a repeated request with the first one's
result instead of doing it twice. A change is retried only when the API says it did not start it
(429, 503, or no connection made). After 502/504 (no answer in time) it may still be running,
holding its path leases, and a retry would find its own lease "busy": the client reports that
the outcome is unknown instead of retrying.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
from urllib3.util.retry import Retry

from hycloud_core.errors import HyCloudError, error_from_body

NOT_STARTED = (429, 503)
NO_ANSWER = (502, 504)
TRANSIENT = NOT_STARTED + NO_ANSWER
MUTATING = frozenset({"POST", "PUT", "DELETE", "PATCH"})
IDEMPOTENCY_HEADER = "Idempotency-Key"
SESSION_HOOKS: list[Callable[[requests.Session], None]] = []
"""Called on every session the client makes (API and presigned S3): e.g. to route it through a
network emulator in benchmarks, or to add a proxy."""


MAX_RETRY_AFTER_S = 30.0  # a server's Retry-After is honoured up to this; longer waits give up


class _Retry(Retry):
    """Any request is retried on 429/503; on 502/504 and dropped answers only reads are.

    A 429/503 answer's `Retry-After` is honoured (the per-user limits say when a token or a job
    slot frees), but a wait is cut to MAX_RETRY_AFTER_S, so a bad or hostile header cannot hang
    the client; after `total` retries the last answer becomes the error."""

    def get_retry_after(self, response) -> float | None:
        wait = super().get_retry_after(response)
        return None if wait is None else min(wait, MAX_RETRY_AFTER_S)

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        if status_code in NOT_STARTED:
            return True
        return status_code in NO_ANSWER and self._is_method_retryable(method)


def new_session(retries: int = 0) -> requests.Session:
    session = requests.Session()
    adapter_args = {"pool_maxsize": 16}
    if retries:
        adapter_args["max_retries"] = _Retry(
            total=retries,
            backoff_factor=0.3,
            status_forcelist=TRANSIENT,
            allowed_methods=frozenset({"GET", "HEAD", "OPTIONS"}),
            raise_on_status=False,
        )
    session.mount("http://", HTTPAdapter(**adapter_args))
    session.mount("https://", HTTPAdapter(**adapter_args))
    for hook in SESSION_HOOKS:
        hook(session)
    return session


class Http:
    def __init__(self, endpoint: str, api_key: str, timeout: float = 60.0, retries: int = 4) -> None:
        self.base = endpoint.rstrip("/")
        self.timeout: float | tuple[float, float] = timeout
        self.session = new_session(retries=retries)
        self.session.headers["Authorization"] = f"Bearer {api_key}"

    def request(self, method: str, route: str, **kwargs: Any) -> requests.Response:
        method = method.upper()
        if method in MUTATING:
            kwargs["headers"] = {IDEMPOTENCY_HEADER: uuid.uuid4().hex, **(kwargs.get("headers") or {})}
        try:
            response = self.session.request(method, self.base + route, timeout=self.timeout, **kwargs)
        except (requests.ConnectionError, requests.Timeout) as err:
            if method in MUTATING and _reached_server(err):
                raise _outcome_unknown(method, route, type(err).__name__) from err
            raise HyCloudError(f"cannot reach {self.base}: {err}", code="unreachable", status=503) from err
        if method in MUTATING and response.status_code in NO_ANSWER:
            raise _outcome_unknown(method, route, f"HTTP {response.status_code}")
        if response.status_code >= 400:
            raise error_from_body(response.status_code, _json_or_none(response))
        return response

    def json(self, method: str, route: str, **kwargs: Any) -> Any:
        return self.request(method, route, **kwargs).json()


def _reached_server(err: requests.RequestException) -> bool:
    """False only when no connection was made, so the request surely changed nothing."""
    if isinstance(err, requests.ConnectTimeout):
        return False
    reason = getattr(err.args[0] if err.args else None, "reason", None)
    return not isinstance(reason, NewConnectionError | ConnectTimeoutError)


def _outcome_unknown(method: str, route: str, what: str) -> HyCloudError:
    return HyCloudError(
        f"{method} {route}: no answer ({what}); the change may still complete on the server: "
        "check before running it again",
        code="outcome-unknown",
        status=504,
    )


def _json_or_none(response: requests.Response) -> dict | None:
    try:
        return response.json()
    except ValueError:
        return {"error": {"code": "http-error", "message": response.text[:200] or response.reason}}
