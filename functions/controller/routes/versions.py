"""Version history: list a file's earlier versions, restore one (services/versions.py)."""

from __future__ import annotations

from typing import Annotated

from answers import Restored, VersionList, ok, replies
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import filesystem
from models import Restore, UserPath
from services import versions

router = APIGatewayRouter()


@router.get("/v1/versions", responses=replies(200, VersionList, 404))
def list_versions(path: Annotated[UserPath, Query()]):
    """Versions an overwrite or a delete replaced, newest first, while the retention keeps them."""
    return ok(versions.listing(filesystem(router), path))


@router.post("/v1/restore", responses=replies(201, Restored, 404, 409))
def restore(body: Annotated[Restore, Body()]):
    """Write `version` (the newest kept when absent) back at `path`, or at `to`; the file it
    replaces there is kept as a version in turn."""
    return ok(versions.restore(filesystem(router), body.path, body.version, body.to), 201)
