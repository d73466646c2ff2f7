"""HTTP plumbing: one session with retries on transient failures, and errors mapped to exceptions.

Every change (POST, PUT, DELETE) carries an `Idempotency-Key`: one random key per operation,
the same on each retry of it, so the API can answer a repeated request with the first one's
result instead of doing it twice. A change is retried only when the API says it did not start it
(429, 503, or no connection made). After 502/504 (no answer in time) it may still be running,
holding its path leases, and a retry would find its own lease "busy": the client reports that
the outcome is unknown instead of retrying. A request that only reads though sent as POST or
PUT (`READ_LIKE`: it starts or finds a job by its key, or answers what the caller may read) is
idempotent: after 502/504 it is retried like a GET, the retry finding the first one's job.

API Gateway answers for the controller when it cannot run or did not answer in time (504 after
29 s, 413 for a body over its 10 MiB or over Lambda's 6 MB event): those answers, which lack the
controller's error body, are reported for what they are. No body that cannot fit is sent.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
from urllib3.util.retry import Retry

from hycloud_core import api_limits
from hycloud_core.auth import READ_LIKE
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
READ_LIKE_RETRIES = 3  # a read-like POST/PUT without an answer (502/504, dropped) is sent again this often
READ_LIKE_BACKOFF_S = 0.5
KEY_IN_USE_WAIT_S = 35.0  # a retry told the first attempt still runs asks again this long (its 29 s limit)
OCTET = "application/octet-stream"  # the API's binary media type: API Gateway base64-encodes such bodies


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
    adapter_args: dict[str, Any] = {"pool_maxsize": 16}
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


class Transport(Protocol):
    """What the SDK asks of a connection to the controller: Http, or FailoverHttp over two."""

    @property
    def base(self) -> str: ...

    def request(self, method: str, route: str, **kwargs: Any) -> requests.Response: ...

    def json(self, method: str, route: str, **kwargs: Any) -> Any: ...


class Http:
    def __init__(self, endpoint: str, api_key: str, timeout: float = 60.0, retries: int = 4) -> None:
        self.base = endpoint.rstrip("/")
        self.timeout: float | tuple[float, float] = timeout
        self.session = new_session(retries=retries)
        self.session.headers["Authorization"] = f"Bearer {api_key}"

    def request(self, method: str, route: str, **kwargs: Any) -> requests.Response:
        method = method.upper()
        _check_body(method, route, kwargs)
        if method in MUTATING:
            kwargs["headers"] = {IDEMPOTENCY_HEADER: uuid.uuid4().hex, **(kwargs.get("headers") or {})}
        tries = 1 + (READ_LIKE_RETRIES if (method, route.rstrip("/")) in READ_LIKE else 0)
        attempt, first_sent = 0, time.monotonic()
        while True:
            response = self._send(method, route, kwargs, last=attempt == tries - 1)
            if response is not None and not (attempt and _key_in_use(response)):
                break
            if response is not None and time.monotonic() - first_sent < KEY_IN_USE_WAIT_S:
                time.sleep(READ_LIKE_BACKOFF_S)  # the first attempt still runs: ask again, uncounted
                continue
            if attempt == tries - 1:
                break
            time.sleep(READ_LIKE_BACKOFF_S * 2**attempt)
            attempt += 1
        assert response is not None  # the last attempt answers or raises
        if response.status_code >= 400:
            raise error_from_body(response.status_code, _error_body(response))
        return response

    def _send(self, method: str, route: str, kwargs: dict[str, Any], last: bool) -> requests.Response | None:
        """One attempt; None when a change got no answer and, not being the `last`, may be sent again."""
        try:
            response = self.session.request(method, self.base + route, timeout=self.timeout, **kwargs)
        except (requests.ConnectionError, requests.Timeout) as err:
            if method in MUTATING and _reached_server(err):
                if not last:
                    return None
                raise _outcome_unknown(method, route, type(err).__name__) from err
            raise HyCloudError(f"cannot reach {self.base}: {err}", code="unreachable", status=503) from err
        if method in MUTATING and response.status_code in NO_ANSWER:
            if not last:
                return None
            raise _outcome_unknown(method, route, f"HTTP {response.status_code}")
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


def _key_in_use(response: requests.Response) -> bool:
    """A retry's answer that the first attempt, under the same key, is still running."""
    if response.status_code != 409:
        return False
    try:
        return response.json()["error"]["code"] == "idempotency-key-in-use"
    except (ValueError, KeyError, TypeError):
        return False


def _check_body(method: str, route: str, kwargs: dict[str, Any]) -> None:
    """Refuse, before sending, a body API Gateway or the controller's Lambda event cannot take."""
    if kwargs.get("json") is not None:
        body, binary = json.dumps(kwargs["json"]).encode(), False
    elif isinstance(kwargs.get("data"), (bytes, bytearray, str)):
        data = kwargs["data"]
        body = data.encode() if isinstance(data, str) else bytes(data)
        headers = {k.lower(): v for k, v in (kwargs.get("headers") or {}).items()}
        binary = headers.get("content-type", "").split(";")[0].strip().lower() == OCTET
    else:
        return
    why = api_limits.refusal(body, binary)
    if why:
        raise HyCloudError(f"{method} {route} not sent: {why}", code="request-too-large", status=413)


def _error_body(response: requests.Response) -> dict:
    """The controller's error body, or one made from API Gateway's own answer (`{"message": ...}`
    or text), which comes when the controller could not run or did not answer in time."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body
    said = body.get("message") if isinstance(body, dict) else None
    said = str(said or response.text[:200] or response.reason)
    if response.status_code == 413:
        message = (
            f"API Gateway refused the request as too large ({said}): a body must fit in "
            f"{api_limits.GATEWAY_BODY_LIMIT} bytes, and in the controller's Lambda event "
            f"({api_limits.LAMBDA_EVENT_LIMIT} bytes, binary bodies base64-encoded)"
        )
        return {"error": {"code": "request-too-large", "message": message}}
    if response.status_code == 504:
        said = f"{said}: the controller did not answer within {api_limits.GATEWAY_TIMEOUT_S:g} s"
    return {"error": {"code": "http-error", "message": f"API Gateway: {said}"}}
