"""The controller served in-process: moto for DynamoDB and S3, a temp dir for EFS, and a
`requests` adapter that hands the client's HTTP requests to the handler as API Gateway would.

For tests of client+controller semantics that make thousands of small requests: each one costs
a function call here instead of a trip through the local cloud's gateway and Lambda. Files are
all small (SMALL_FILE_THRESHOLD), so no presigned S3 URL is needed. What needs another service
(a Step Functions job, another Lambda) is not faked: the controller's 5xx answer raises
`InProcessCloudError`, and such tests stay in tests/e2e.
"""

from __future__ import annotations

import base64
import copy
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
import requests
from moto.dynamodb.models.table import Table as MotoTable
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict
from urllib3 import HTTPResponse

from hycloud import http
from tests.conftest import LambdaContext, api_event, load_function, make_stores

BASE = "http://hycloud.inprocess/v1/_user_request_"  # the shape of the deployed API's URL
BUCKET, TABLE, REGION = "hycloud-inprocess-content", "hycloud-inprocess", "us-east-1"
SMALL_FILE_THRESHOLD = 64 * 1024 * 1024  # every test file is small: no presigned S3 transfers
OCTET = http.OCTET  # the API's binary media type: such bodies travel base64-encoded


class InProcessCloudError(RuntimeError):
    """The controller failed (5xx): a defect, or a service the in-process cloud lacks."""


def _listing(pairs: list[tuple[str, str]]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Single- and multi-value maps of name/value pairs, as API Gateway puts them in an event."""
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for name, value in pairs:
        single[name] = value  # the last value, as API Gateway does
        multi.setdefault(name, []).append(value)
    return single, multi


def _body_bytes(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode()
    if isinstance(body, bytes | bytearray):
        return bytes(body)
    if hasattr(body, "read"):
        return body.read()
    return b"".join(body)  # a generator of chunks


def to_event(request: requests.PreparedRequest, base_path: str) -> dict:
    """The API Gateway REST proxy event of `request` (the route is the URL path past the base):
    `api_event`'s, with every value of a repeated header or query name and the full request path."""
    url = urlsplit(request.url or "")
    path = url.path[len(base_path) :] or "/"
    headers, multi_headers = _listing(list(request.headers.items()))
    query, multi_query = _listing(parse_qsl(url.query, keep_blank_values=True))
    data = _body_bytes(request.body)
    binary = _content_type(request.headers) == OCTET
    body: bytes | str | None = None
    if data or request.body is not None:
        body = data if binary else data.decode("utf-8", "replace")
    event = api_event(request.method or "GET", path, query=query or None, body=body, headers=headers)
    event["multiValueHeaders"] = multi_headers
    event["multiValueQueryStringParameters"] = multi_query or None
    event["requestContext"].update(path=url.path, requestId="inprocess")
    return event


def _content_type(headers: Any) -> str:
    return (headers.get("content-type") or "").split(";")[0].strip().lower()


def to_response(answer: dict, request: requests.PreparedRequest) -> requests.Response:
    """The `requests.Response` the client would get from API Gateway for the handler's answer."""
    headers = CaseInsensitiveDict(answer.get("headers") or {})
    for name, values in (answer.get("multiValueHeaders") or {}).items():
        headers[name] = ", ".join(values)
    body = answer.get("body") or ""
    data = base64.b64decode(body) if answer.get("isBase64Encoded") else body.encode()
    response = requests.Response()
    response.status_code = answer["statusCode"]
    response.headers = headers
    response.raw = HTTPResponse(
        body=BytesIO(data), headers=dict(headers), status=response.status_code, preload_content=False
    )
    response.url, response.request = request.url or "", request
    response.reason = "in-process"
    response.encoding = requests.utils.get_encoding_from_headers(headers)
    return response


class ControllerAdapter(BaseAdapter):
    """Answers requests under BASE by calling the controller's handler, one at a time: the
    Powertools resolver keeps the current event on module state, and the client uses threads."""

    def __init__(self, handler: Any) -> None:
        super().__init__()
        self.handler = handler
        self.base_path = urlsplit(BASE).path
        self.lock = threading.Lock()
        self.requests = 0

    def send(self, request, stream=False, timeout=None, verify=True, cert=None, proxies=None):
        event = to_event(request, self.base_path)
        with self.lock:
            self.requests += 1
            answer = self.handler.handler(event, LambdaContext())
        if answer["statusCode"] >= 500:
            raise InProcessCloudError(
                f"{request.method} {event['path']} -> {answer['statusCode']}: {answer.get('body')}"
            )
        return to_response(answer, request)

    def close(self) -> None:
        pass


@dataclass
class InProcessCloud:
    """A running in-process cloud: its API URL, a user's key, and the adapter serving it."""

    base: str
    key: str
    adapter: ControllerAdapter
    root: Path
    users: dict[str, str] = field(default_factory=dict)

    def mount(self, session: requests.Session) -> None:
        session.mount(self.base, self.adapter)


class _TablesKept:
    """moto's `copy` module as its transactions see it: a table is not deep-copied for the
    rollback (that copy is of the whole table, per item of every transaction: seconds per request
    once the table holds a module's files); `_rolled_back` keeps only the items a transaction names."""

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)

    @staticmethod
    def deepcopy(value: Any, memo: Any = None) -> Any:
        return value if isinstance(value, MotoTable) else copy.deepcopy(value, memo)


def _item_key(backend: Any, op: dict) -> tuple[str, dict]:
    if "Key" in op:
        return op["TableName"], op["Key"]
    table = backend.get_table(op["TableName"])
    names = [n for n in (table.hash_key_attr, table.range_key_attr) if n is not None]
    return op["TableName"], {n: op["Item"][n] for n in names}


def _attributes(item: Any) -> dict | None:
    return copy.deepcopy(item.to_json()["Attributes"]) if item else None


def _rolled_back(original: Callable[..., None]) -> Callable[..., None]:
    """moto's TransactWriteItems with the all-or-nothing undo done on the named items only."""

    def transact_write_items(self: Any, transact_items: list[dict]) -> None:
        keys = [_item_key(self, op) for item in transact_items for op in item.values() if "TableName" in op]
        before = [(name, key, _attributes(self.get_item(name, key))) for name, key in keys]
        try:
            original(self, transact_items)
        except Exception:
            for name, key, attrs in before:
                if attrs is None:
                    self.delete_item(name, key)
                else:
                    self.put_item(name, attrs)
            raise

    return transact_write_items


def _environment(root: Path) -> dict[str, str]:
    return {
        "AWS_DEFAULT_REGION": REGION,
        "HYCLOUD_TABLE": TABLE,
        "HYCLOUD_BUCKET": BUCKET,
        "HYCLOUD_EFS_ROOT": str(root / "efs"),
        "HYCLOUD_SMALL_FILE_THRESHOLD": str(SMALL_FILE_THRESHOLD),
        "HYCLOUD_STATE": str(root / "state.sqlite3"),  # the client's version cache
    }


@contextmanager
def running(root: Path, users: tuple[str, ...] = ("alice",)) -> Iterator[InProcessCloud]:
    """Start the cloud under `root` (env set, moto active, `users` created, the adapter mounted on
    every session the client makes); undo it all on exit. `key` is the first user's key."""
    from moto import mock_aws

    from hycloud.admin import create_user

    with pytest.MonkeyPatch.context() as env, mock_aws():
        for name, value in _environment(root).items():
            env.setenv(name, value)
        env.delenv("HYCLOUD_INSTANCES", raising=False)  # one region: no other instances to reach
        _fast_transactions(env)
        make_stores(BUCKET, TABLE)
        keys = {user: create_user(TABLE, user) for user in users}
        cloud = InProcessCloud(
            BASE, keys[users[0]], ControllerAdapter(load_function("controller")), root, keys
        )
        http.SESSION_HOOKS.append(cloud.mount)
        try:
            yield cloud
        finally:
            http.SESSION_HOOKS.remove(cloud.mount)


def _fast_transactions(env: pytest.MonkeyPatch) -> None:
    import moto.dynamodb.models as dynamodb

    env.setattr(dynamodb, "copy", _TablesKept())
    env.setattr(
        dynamodb.DynamoDBBackend,
        "transact_write_items",
        _rolled_back(dynamodb.DynamoDBBackend.transact_write_items),
    )


@pytest.fixture(scope="module")
def inprocess_cloud(tmp_path_factory) -> Iterator[InProcessCloud]:
    """One in-process cloud per test module (and per xdist worker)."""
    with running(tmp_path_factory.mktemp("inprocess-cloud")) as cloud:
        yield cloud
