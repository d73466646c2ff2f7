"""Metadata about paths and the caller."""

from __future__ import annotations

from typing import Annotated

from answers import Entry, Instances, Whoami, replies
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import CONFIG, namespace, ok, records, s3_endpoint, user_name
from models import UserPath

from hycloud_core import content
from hycloud_core.instances import on_ring

router = APIGatewayRouter()


@router.get("/v1/stat", responses=replies(200, Entry, 404))
def stat(path: Annotated[UserPath, Query()]):
    return ok(namespace(router).stat(path).to_dict())


@router.get("/v1/whoami", responses=replies(200, Whoami))
def whoami():
    return ok(
        {
            "user": user_name(router),
            "small_file_threshold": CONFIG.small_file_threshold,
            "part_size": content.PART_SIZE,
            "s3_efs_rate": CONFIG.s3_efs_rate,
        }
    )


@router.get("/v1/instances", responses=replies(200, Instances))
def instances():
    """Every instance on the ring, home first: where coded blocks go (docs/GEO.md)."""
    found = on_ring(records().table)
    return ok(
        {
            "instances": [
                {"region": i.region, "bucket": i.bucket, "home": i.home, "s3_endpoint": s3_endpoint(i.region)}
                for i in found
            ]
        }
    )
