"""Per-request context: configuration, clients and the authenticated caller.

Parameters and JSON bodies are not parsed here: the routes declare them (models.py) and
Powertools validates them before a route runs. Raw bodies are bodies.py's, version preconditions
preconditions.py's, long polls polling.py's, replies answers.py's.
"""

from __future__ import annotations

from functools import cache

import boto3
import limits
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from botocore.config import Config

from hycloud_core import auth, reach
from hycloud_core.config import InstanceConfig
from hycloud_core.fs import FileSystem, Namespace
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
