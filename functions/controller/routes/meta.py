"""Metadata about paths and the caller."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import CONFIG, namespace, ok, query, user_name

from hycloud_core import content

router = APIGatewayRouter()


@router.get("/v1/stat")
def stat() -> Response:
    return ok(namespace(router).stat(query(router, "path")).to_dict())


@router.get("/v1/whoami")
def whoami() -> Response:
    return ok(
        {
            "user": user_name(router),
            "small_file_threshold": CONFIG.small_file_threshold,
            "part_size": content.PART_SIZE,
            "s3_efs_rate": CONFIG.s3_efs_rate,
        }
    )
