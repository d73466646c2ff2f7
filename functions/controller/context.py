"""Per-request context: configuration, clients, the authenticated user, raw bodies and replies.

Parameters and JSON bodies are not parsed here: the routes declare them (models.py) and
Powertools validates them before a route runs.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Callable
from functools import cache
from typing import Annotated

import boto3
import limits
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.api_gateway import BaseRouter
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.openapi.params import Header
from botocore.config import Config

from hycloud_core import auth, reach
from hycloud_core.api_limits import ANSWER_MARGIN_S, GATEWAY_TIMEOUT_S, MAX_WAIT_S
from hycloud_core.config import InstanceConfig
from hycloud_core.errors import BadRequestError
from hycloud_core.fs import FileSystem, Namespace
from hycloud_core.fs.operations import ABSENT
from hycloud_core.store.objects import Objects
from hycloud_core.store.records import Records
from hycloud_core.store.users import Users

CONFIG = InstanceConfig()
PUBLIC_PREFIX = "/v1/shared/"  # share links: the token in the path is the credential


@cache
def records() -> Records:
    return Records(CONFIG.table)


# Presigned part URLs carry the client's SHA-256 checksum; no extra checksums of our own.
_S3_CONFIG = Config(
    signature_version="s3v4",
    request_checksum_calculation="when_required",
    response_checksum_validation="when_required",
)


@cache
def s3():
    return boto3.client("s3", config=_S3_CONFIG)


@cache
def s3_in(region: str):
    """An S3 client of another instance's region (its bucket, its presigned URLs)."""
    return reach.client("s3", region, config=_S3_CONFIG)


@cache
def s3_endpoint(region: str) -> str:
    """The S3 endpoint a presigned URL of that region's bucket names."""
    return boto3.client("s3", region_name=region).meta.endpoint_url


@cache
def sfn():
    return reach.client("stepfunctions")


def authenticate(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response:
    """Resolve the API key to a user before any route runs; refuse the request otherwise.

    The key's user must still exist with the id the key was made for and be enabled, and a
    read-only key may not change files; routes see the user's internal id, never its name. The
    request is then served within the user's fair-use limits (limits.py: 429 past them).
    """
    event = app.current_event
    if event.http_method == "OPTIONS" or event.path.startswith(PUBLIC_PREFIX):  # CORS preflight, share links
        return next_middleware(app)
    headers = event.headers or {}
    users = Users(records().table)
    identity, profile = users.identify_with_profile(headers.get("authorization") or headers.get("x-api-key"))
    auth.check_access(identity, app.current_event.http_method, app.current_event.path)
    app.append_context(user=identity.user_id, user_name=identity.name)
    return limits.guarded(records().table, identity.user_id, profile, lambda: next_middleware(app))


def user(app: APIGatewayRestResolver) -> str:
    """The caller's internal id: what its namespace and records are keyed by."""
    return app.context["user"]


def user_name(app: APIGatewayRestResolver) -> str:
    return app.context["user_name"]


def namespace(app: APIGatewayRestResolver) -> Namespace:
    return Namespace(CONFIG.namespaces_dir, user(app))


def filesystem(app: APIGatewayRestResolver) -> FileSystem:
    return FileSystem.deployed(CONFIG, user(app), s3(), records())


def objects() -> Objects:
    return Objects(records().table, s3(), CONFIG.bucket)


def raw_body(app: APIGatewayRestResolver) -> bytes:
    """The request body as bytes, whether API Gateway passed it base64-encoded or as text."""
    body = app.current_event.body or ""
    if app.current_event.is_base64_encoded:
        try:
            return base64.b64decode(body, validate=True)
        except ValueError:
            raise BadRequestError("body is not valid base64", code="bad-body") from None
    try:
        return body.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequestError(
            "body is not valid text; send it as application/octet-stream", code="bad-body"
        ) from None


def check_sha256(data: bytes, declared: str | None) -> str:
    """Verify the client's declared sha256 of the body, which catches truncated uploads."""
    digest = hashlib.sha256(data).hexdigest()
    if declared and declared.lower() != digest:
        raise BadRequestError("body does not match its x-hycloud-sha256", code="hash-mismatch")
    return digest


IfMatch = Annotated[
    str | None,
    Header(
        alias="if-match",
        description="The path's current content_hash (a small file's body sha256 too); else 409 version-mismatch",
    ),
]
IfNoneMatch = Annotated[
    str | None,
    Header(alias="if-none-match", description="`*`: the path must not exist; else 409 version-mismatch"),
]


def expected_version(if_match: str | None, if_none_match: str | None) -> str | None:
    """The version a write requires the path to hold (ABSENT for `If-None-Match: *`); None when
    the request names none, and the last writer wins."""
    if (if_none_match or "").strip() == "*":
        return ABSENT
    if if_match is None:
        return None
    value = if_match.strip().strip('"').lower()
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise BadRequestError("If-Match must be a content hash (64 hex digits)", code="bad-version")
    return value


def ok(body: dict | list, status: int = 200) -> Response:
    return Response(status_code=status, content_type="application/json", body=body)


def answer_deadline() -> float:
    """The `time.monotonic()` by which this request's answer must be on its way: ANSWER_MARGIN_S
    before API Gateway answers 504 in its place, counted from when API Gateway took the request
    (the event's requestTimeEpoch), and before the function's own timeout. Outside a request,
    from now."""
    budget = GATEWAY_TIMEOUT_S - ANSWER_MARGIN_S
    left = budget
    try:
        taken = BaseRouter.current_event.request_context.request_time_epoch / 1000
        left = taken + budget - time.time()
    except (AttributeError, KeyError, TypeError):
        pass
    try:
        left = min(left, BaseRouter.lambda_context.get_remaining_time_in_millis() / 1000 - ANSWER_MARGIN_S)
    except AttributeError:
        pass
    return time.monotonic() + max(0.0, min(left, budget))


def long_poll(fetch: Callable[[], dict], wait_s: float, running: Callable[[dict], bool]) -> dict:
    """Fetch a job's state, holding up to `wait_s` (at most MAX_WAIT_S, and never past the
    request's `answer_deadline`) while `running` says it has not ended.

    Saves the client a round trip per poll on a slow link: it learns of the end at once; a job
    still running is answered as such and the client asks again. The checks start 50 ms apart,
    for short jobs, and spread to 0.5 s: each one reads the job's execution and records, and a
    client held for 20 s would otherwise cost 400 of those reads (Step Functions'
    DescribeExecution is throttled per account).
    """
    deadline = min(time.monotonic() + min(wait_s, MAX_WAIT_S), answer_deadline())
    pause = 0.05
    while True:
        state = fetch()
        if not running(state) or time.monotonic() >= deadline:
            return state
        time.sleep(min(pause, max(deadline - time.monotonic(), 0.0)))
        pause = min(pause * 1.5, 0.5)
