"""Metadata about paths and the caller."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import namespace, query, user

router = APIGatewayRouter()


@router.get("/v1/stat")
def stat() -> Response:
    entry = namespace(router).stat(query(router, "path"))
    return Response(status_code=200, content_type="application/json", body=entry.to_dict())


@router.get("/v1/whoami")
def whoami() -> Response:
    return Response(status_code=200, content_type="application/json", body={"user": user(router)})
