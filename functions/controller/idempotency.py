"""Idempotency-Key: a retried mutating request gets the first attempt's answer instead of running again.

A client that lost a response (timeout, dropped connection) retries with the same key; without
this, a retried move finds its source gone and a retried copy or delete reports a conflict for
its own success. Records live in the single table (`IDEM` partition, see store/records.py) for
an hour, keyed by the user, the key, the method and the route, so two users never share one; the
query and body are checked too, so a key reused for a different request is refused.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache

import boto3
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.serialization.base import BaseIdempotencySerializer
from bodies import raw_body
from context import CONFIG, user

from hycloud_core.errors import BadRequestError

HEADER = "Idempotency-Key"
KEY_PATTERN = r"^[\x21-\x7e]{1,255}$"  # visible ASCII, like a UUID or ULID
MUTATING = frozenset({"POST", "PUT", "DELETE"})
# Starting an upload or a job, or asking for part URLs, is idempotent by itself (named after what it
# computes), and their answers hold presigned URLs too large and too short-lived to keep.
EXEMPT = frozenset(
    {
        ("POST", "/v1/uploads"),
        ("POST", "/v1/uploads/urls"),
        ("POST", "/v1/coded/uploads"),  # a new challenge each time; a URL per block
        ("POST", "/v1/coded/uploads/urls"),
        ("POST", "/v1/relay"),
        ("POST", "/v1/delta/download"),
        ("PUT", "/v1/delta/download"),  # a job named by the checksum list; its answer may be the delta
        # A bundle commits each file as its own idempotent write (same bytes, same path), and its
        # answers (one entry per file, or the files themselves) are too large to keep.
        ("POST", "/v1/bundles"),
        ("POST", "/v1/bundles/download"),
        # A read sent as POST (its paths would not fit a URL); its answers may exceed an item.
        ("POST", "/v1/merkle/children"),
        ("POST", "/v1/merkle/diff"),  # the same, its body and answer binary
    }
)
TTL_S = 3600
SETTINGS = IdempotencyConfig(
    event_key_jmespath="key",
    payload_validation_jmespath="request",
    expires_after_seconds=TTL_S,
    hash_function="sha256",
)


def covers(method: str, route: str) -> bool:
    """Whether a request to this route honours an Idempotency-Key (the OpenAPI document says so too)."""
    return method.upper() in MUTATING and (method.upper(), route) not in EXEMPT


class _Responses(BaseIdempotencySerializer):
    """A route's Response as the record keeps it, and back. The body is kept as the JSON text the
    resolver sends (same separators, same key order), so a replay answers byte for byte."""

    def to_dict(self, data: Response) -> dict:
        body = data.body if isinstance(data.body, str) else json.dumps(data.body, separators=(",", ":"))
        return {"status": data.status_code, "content_type": data.headers.get("Content-Type"), "body": body}

    def from_dict(self, data: dict) -> Response:
        return Response(
            status_code=int(data["status"]),
            content_type=data.get("content_type"),
            body=data.get("body"),
            headers={"Idempotent-Replayed": "true"},
        )


@cache
def _store() -> DynamoDBPersistenceLayer:
    return DynamoDBPersistenceLayer(
        table_name=CONFIG.table,
        key_attr="pk",
        sort_key_attr="sk",
        static_pk_value="IDEM",
        boto3_client=boto3.client("dynamodb"),
    )


def _request(app: APIGatewayRestResolver, key: str) -> dict:
    """What identifies the request (`key`) and what a retry must repeat exactly (`request`)."""
    event = app.current_event
    return {
        "key": {"user": user(app), "key": key, "method": event.http_method, "route": event.path},
        "request": {
            "query": sorted((event.query_string_parameters or {}).items()),
            "body": hashlib.sha256(raw_body(app)).hexdigest(),
        },
    }


def idempotent(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response:
    """Middleware: run the route once per Idempotency-Key; a request without one runs as always."""
    key = app.current_event.headers.get(HEADER)
    if key is None or not covers(app.current_event.http_method, app.current_event.path):
        return next_middleware(app)
    if not re.match(KEY_PATTERN, key):
        raise BadRequestError(f"{HEADER} must be 1-255 visible ASCII characters", code="bad-idempotency-key")
    SETTINGS.register_lambda_context(app.lambda_context)

    @idempotent_function(
        data_keyword_argument="request",
        persistence_store=_store(),
        config=SETTINGS,
        output_serializer=_Responses(),
        key_prefix="controller",
    )
    def run(request: dict) -> Response:
        return next_middleware(app)

    return run(request=_request(app, key))
