"""The trash: list what `rm` and `rm -r` removed, restore an item, empty it (services/trash.py)."""

from __future__ import annotations

from typing import Annotated

from answers import TrashEmptied, TrashList, TrashRestored, ok, replies
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import filesystem
from models import TrashEmpty, TrashRestore
from services import trash

router = APIGatewayRouter()


@router.get("/v1/trash", responses=replies(200, TrashList))
def list_trash():
    """What the trash holds, newest first; each item is purged once the retention has passed."""
    return ok(trash.listing(filesystem(router)))


@router.post("/v1/trash/restore", responses=replies(201, TrashRestored, 404, 409))
def restore(body: Annotated[TrashRestore, Body()]):
    """Put `item` back where it was, or at `to`. 409 `already-exists` when something is there
    (nothing is overwritten); folders above it removed since are made again."""
    return ok(trash.restore(filesystem(router), body.item, body.to), 201)


@router.post("/v1/trash/empty", responses=replies(200, TrashEmptied, 404))
def empty(body: Annotated[TrashEmpty, Body()]):
    """Remove `item` (404 when not in the trash), or every item, for good."""
    return ok(trash.empty(filesystem(router), body.item))
