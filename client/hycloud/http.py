"""HTTP plumbing: one session with retries on transient failures, and errors mapped to exceptions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from hycloud_core.errors import HyCloudError, error_from_body

TRANSIENT = (429, 502, 503, 504)
SESSION_HOOKS: list[Callable[[requests.Session], None]] = []
"""Called on every session the client makes (API and presigned S3): e.g. to route it through a
network emulator in benchmarks, or to add a proxy."""


def new_session(retries: int = 0) -> requests.Session:
    session = requests.Session()
    adapter_args = {"pool_maxsize": 16}
    if retries:
        adapter_args["max_retries"] = Retry(
            total=retries, backoff_factor=0.3, status_forcelist=TRANSIENT, allowed_methods=None
        )
    session.mount("http://", HTTPAdapter(**adapter_args))
    session.mount("https://", HTTPAdapter(**adapter_args))
    for hook in SESSION_HOOKS:
        hook(session)
    return session


class Http:
    def __init__(self, endpoint: str, api_key: str, timeout: float = 60.0) -> None:
        self.base = endpoint.rstrip("/")
        self.timeout = timeout
        self.session = new_session(retries=4)
        self.session.headers["Authorization"] = f"Bearer {api_key}"

    def request(self, method: str, route: str, **kwargs: Any) -> requests.Response:
        try:
            response = self.session.request(method, self.base + route, timeout=self.timeout, **kwargs)
        except requests.ConnectionError as err:
            raise HyCloudError(f"cannot reach {self.base}: {err}", code="unreachable", status=503) from err
        if response.status_code >= 400:
            raise error_from_body(response.status_code, _json_or_none(response))
        return response

    def json(self, method: str, route: str, **kwargs: Any) -> Any:
        return self.request(method, route, **kwargs).json()


def _json_or_none(response: requests.Response) -> dict | None:
    try:
        return response.json()
    except ValueError:
        return {"error": {"code": "http-error", "message": response.text[:200] or response.reason}}
