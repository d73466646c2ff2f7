"""Directories: create and list."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import json_body, namespace, query
from hycloud_core.errors import BadRequestError

router = APIGatewayRouter()


@router.post("/v1/dirs")
def mkdir() -> Response:
    body = json_body(router)
    if not isinstance(body.get("path"), str):
        raise BadRequestError('body must be JSON {"path": str, "parents": bool}', code="bad-body")
    entry = namespace(router).mkdir(body["path"], parents=bool(body.get("parents", False)))
    return Response(status_code=201, content_type="application/json", body=entry.to_dict())


@router.get("/v1/dirs")
def listdir() -> Response:
    entries = namespace(router).listdir(query(router, "path", "/"))
    return Response(
        status_code=200, content_type="application/json", body={"entries": [e.to_dict() for e in entries]}
    )
