"""Raw request bodies (a file's bytes): decoded as API Gateway passed them, checked against the
sha256 the client declared."""

from __future__ import annotations

import base64
import hashlib

from aws_lambda_powertools.event_handler import APIGatewayRestResolver

from hycloud_core.errors import BadRequestError


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
