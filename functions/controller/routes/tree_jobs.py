"""Tree jobs' status: `GET /v1/tree-jobs?id=&wait=` long-polls a job's state (jobs start from the
move, copy and recursive rmdir routes; services/tree_ops.py runs them)."""

from __future__ import annotations

from typing import Annotated

from answers import TreeJobStatus, ok, replies
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import user
from models import TreeJobId, Wait
from polling import long_poll
from services import tree_ops

from hycloud_core.store.tree_jobs import RUNNING

router = APIGatewayRouter()


@router.get("/v1/tree-jobs", responses=replies(200, TreeJobStatus, 404))
def status(id: Annotated[TreeJobId, Query()], wait: Annotated[Wait, Query()] = 0):
    """A tree job's state and counts; with `wait`, held until it ends (long poll)."""
    who = user(router)
    tree_ops.reconcile(who, id)
    return ok(long_poll(lambda: tree_ops.current(who, id), wait, lambda s: s["state"] == RUNNING))
