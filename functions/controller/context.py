"""Per-request context: configuration, clients and the authenticated user."""

from __future__ import annotations

import base64
import hashlib
from functools import cache

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from hycloud_core import auth
from hycloud_core.config import InstanceConfig
from hycloud_core.errors import BadRequestError, ForbiddenError
from hycloud_core.fs import Namespace
from hycloud_core.store.records import Records

CONFIG = InstanceConfig()


@cache
def records() -> Records:
    return Records(CONFIG.table)


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


def query(app: APIGatewayRestResolver, name: str, default: str | None = None) -> str:
    value = app.current_event.get_query_string_value(name, default)
    if value is None:
        raise BadRequestError(f"query parameter '{name}' is required", code="missing-parameter")
    return value


def flag(app: APIGatewayRestResolver, name: str) -> bool:
    return query(app, name, "false").lower() in ("1", "true", "yes")


def raw_body(app: APIGatewayRestResolver) -> bytes:
    """The request body as bytes, whether API Gateway passed it base64-encoded or as text."""
    body = app.current_event.body or ""
    if app.current_event.is_base64_encoded:
        try:
            return base64.b64decode(body, validate=True)
        except ValueError:
            raise BadRequestError("body is not valid base64", code="bad-body") from None
    return body.encode("utf-8")


def json_body(app: APIGatewayRestResolver) -> dict:
    """The request body as a JSON object, or a 400 that says why not."""
    try:
        body = app.current_event.json_body if app.current_event.body else None
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise BadRequestError("body must be a JSON object", code="bad-body")
    return body


def check_sha256(app: APIGatewayRestResolver, data: bytes) -> str:
    """Verify the client's declared sha256 of the body, which catches truncated uploads."""
    digest = hashlib.sha256(data).hexdigest()
    declared = (app.current_event.headers or {}).get("x-hycloud-sha256")
    if declared and declared.lower() != digest:
        raise BadRequestError("body does not match its x-hycloud-sha256", code="hash-mismatch")
    return digest
