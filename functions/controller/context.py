"""Per-request context: configuration, clients, the authenticated user and request parsing."""

from __future__ import annotations

import base64
import hashlib
import math
import time
from collections.abc import Callable
from functools import cache

import boto3
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from botocore.config import Config

from hycloud_core import auth
from hycloud_core.config import InstanceConfig
from hycloud_core.errors import BadRequestError, ForbiddenError
from hycloud_core.fs import FileSystem, Namespace
from hycloud_core.fs.operations import ABSENT
from hycloud_core.fs.relay_cache import check_range
from hycloud_core.store.objects import Objects
from hycloud_core.store.records import Records

CONFIG = InstanceConfig()


@cache
def records() -> Records:
    return Records(CONFIG.table)


@cache
def s3():
    # Presigned part URLs carry the client's SHA-256 checksum; no extra checksums of our own.
    return boto3.client(
        "s3",
        config=Config(
            signature_version="s3v4",
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        ),
    )


@cache
def sfn():
    return boto3.client("stepfunctions")


def authenticate(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response:
    """Resolve the API key to a user before any route runs; refuse the request otherwise."""
    headers = app.current_event.headers or {}
    token = headers.get("authorization") or headers.get("x-api-key")
    key_id, secret = auth.parse_token(token)
    item = records().get_key(key_id)
    if not item or not auth.secret_matches(secret, item["secret_hash"]):
        raise ForbiddenError("API key not recognised", code="invalid-key")
    app.append_context(user=item["user"])
    return next_middleware(app)


def user(app: APIGatewayRestResolver) -> str:
    return app.context["user"]


def namespace(app: APIGatewayRestResolver) -> Namespace:
    return Namespace(CONFIG.namespaces_dir, user(app))


def filesystem(app: APIGatewayRestResolver) -> FileSystem:
    return FileSystem(
        user(app),
        namespace(app),
        records(),
        objects(),
        s3(),
        CONFIG.bucket,
        retain_s=CONFIG.version_retention_s,
    )


def objects() -> Objects:
    return Objects(records().table, s3(), CONFIG.bucket)


def query(app: APIGatewayRestResolver, name: str, default: str | None = None) -> str:
    value = app.current_event.get_query_string_value(name, default)
    if value is None:
        raise BadRequestError(f"query parameter '{name}' is required", code="missing-parameter")
    return value


def flag(app: APIGatewayRestResolver, name: str) -> bool:
    value = query(app, name, "false").lower()
    if value not in ("true", "false", "1", "0"):
        raise BadRequestError(f"query parameter '{name}' must be true or false", code="bad-parameter")
    return value in ("true", "1")


def raw_body(app: APIGatewayRestResolver) -> bytes:
    """The request body as bytes, whether API Gateway passed it base64-encoded or as text."""
    body = app.current_event.body or ""
    if app.current_event.is_base64_encoded:
        try:
            return base64.b64decode(body, validate=True)
        except ValueError:
            raise BadRequestError("body is not valid base64", code="bad-body") from None
    return body.encode("utf-8")


def json_body(app: APIGatewayRestResolver, **fields: type | tuple[type, ...]) -> dict:
    """The request body as a JSON object whose named fields have the given types, or a 400."""
    try:
        body = app.current_event.json_body if app.current_event.body else None
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise BadRequestError("body must be a JSON object", code="bad-body")
    for name, kind in fields.items():
        optional = isinstance(kind, tuple) and type(None) in kind
        if name not in body and optional:
            continue
        if not isinstance(body.get(name), kind) or (kind is int and isinstance(body.get(name), bool)):
            raise BadRequestError(f"field '{name}' is missing or of the wrong type", code="bad-body")
    return body


def check_sha256(app: APIGatewayRestResolver, data: bytes) -> str:
    """Verify the client's declared sha256 of the body, which catches truncated uploads."""
    digest = hashlib.sha256(data).hexdigest()
    declared = (app.current_event.headers or {}).get("x-hycloud-sha256")
    if declared and declared.lower() != digest:
        raise BadRequestError("body does not match its x-hycloud-sha256", code="hash-mismatch")
    return digest


def expected_version(app: APIGatewayRestResolver) -> str | None:
    """`If-Match: <version>` (the path's content hash, or sha256 of a small file) or
    `If-None-Match: *` (the path must not exist); None when the request names no version."""
    headers = app.current_event.headers or {}
    lower = {k.lower(): v for k, v in headers.items()}
    if lower.get("if-none-match", "").strip() == "*":
        return ABSENT
    value = lower.get("if-match")
    if value is None:
        return None
    value = value.strip().strip('"').lower()
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise BadRequestError("If-Match must be a content hash (64 hex digits)", code="bad-version")
    return value


def ok(body: dict | list, status: int = 200) -> Response:
    return Response(status_code=status, content_type="application/json", body=body)


MAX_WAIT_S = 20.0  # well inside API Gateway's 29 s


def wait_seconds(app: APIGatewayRestResolver) -> float:
    """The `wait` query parameter: how long a status request may hold for the job to finish."""
    try:
        wait = float(query(app, "wait", "0"))
    except ValueError:
        wait = math.nan
    if not math.isfinite(wait) or wait < 0:
        raise BadRequestError("wait must be a non-negative number of seconds", code="bad-parameter")
    return min(wait, MAX_WAIT_S)


def long_poll(fetch: Callable[[], dict], wait_s: float, running: Callable[[dict], bool]) -> dict:
    """Fetch a job's state, holding up to `wait_s` while `running` says it has not ended.

    Saves the client a round trip per poll on a slow link: it learns of the end at once.
    """
    deadline = time.monotonic() + wait_s
    while True:
        state = fetch()
        if not running(state) or time.monotonic() >= deadline:
            return state
        time.sleep(0.05)


def byte_range(app: APIGatewayRestResolver) -> tuple[int, int]:
    """The `offset` and `length` query parameters of a ranged read, checked."""
    try:
        offset, length = int(query(app, "offset")), int(query(app, "length"))
    except ValueError:
        raise BadRequestError("offset and length must be integers", code="bad-range") from None
    check_range(offset, length)
    return offset, length
