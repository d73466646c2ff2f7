"""The standby's replication as each controller sees it (docs/FAILOVER.md).

`GET /v1/replication` answers the lag from this controller's own table (the replication job
writes its status into both). On the standby, every change a user makes marks that user as
diverged, so the job stops overwriting its namespace; the user's client clears the mark
(`DELETE /v1/replication/diverged`) once it has reconciled the primary with the standby.
"""

from __future__ import annotations

from answers import JSON, ok, replies
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import records, user

from hycloud_core.auth import READ_LIKE, WRITE_METHODS
from hycloud_core.errors import HyCloudError
from hycloud_core.standby.status import ReplicationStatus, role

router = APIGatewayRouter()
ROUTE = "/v1/replication"
PRIMARY_ONLY = ("/v1/coded",)  # coded files' blocks are in the data instances, unknown to the standby

REPORT = {
    JSON: {
        "schema": {
            "type": "object",
            "required": ["role", "lag_s", "in_step_at", "paused", "diverged"],
            "properties": {
                "role": {"type": "string", "enum": ["primary", "standby"]},
                "lag_s": {
                    "type": ["number", "null"],
                    "description": "seconds since the standby was last in step (null: never yet)",
                },
                "in_step_at": {"type": ["number", "null"]},
                "namespace_lag_s": {
                    "type": ["number", "null"],
                    "description": "the namespaces' lag (the Merkle-driven job), as lag_s",
                },
                "records_lag_s": {
                    "type": ["number", "null"],
                    "description": "how long the record stream's last batch took to reach the standby",
                },
                "records_applied_at": {"type": ["number", "null"]},
                "records_ok": {"type": "boolean", "description": "the stream's last batch landed whole"},
                "last_pass_at": {"type": ["number", "null"]},
                "paused": {"type": "boolean"},
                "diverged_users": {"type": "integer"},
                "diverged": {"type": "boolean", "description": "the caller wrote to the standby"},
            },
        }
    }
}
CLEARED = {JSON: {"schema": {"type": "object", "properties": {"diverged": {"type": "boolean"}}}}}


def _status() -> ReplicationStatus:
    return ReplicationStatus(records().table)


@router.get(ROUTE, responses=replies(200, None, content=REPORT))
def replication():
    status = _status()
    caller = user(router)
    return ok({**status.report(role(), user=caller), "diverged": status.is_diverged(caller)})


@router.delete(f"{ROUTE}/diverged", responses=replies(200, None, content=CLEARED))
def reconciled():
    """The caller's client has copied to the primary what it wrote here: replicate it again."""
    _status().clear_diverged(user(router))
    return ok({"diverged": False})


def mark_diverged(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response:
    """On the standby, a change by a user makes that user's namespace its own until reconciled;
    coded files, which only the primary can reach, are refused with a 503."""
    method, path = app.current_event.http_method.upper(), app.current_event.path.rstrip("/")
    if role() == "standby" and path.startswith(PRIMARY_ONLY):
        raise HyCloudError(
            f"{path} runs on the primary controller only; retry once it is back",
            code="primary-only",
            status=503,
        )
    changes = method in WRITE_METHODS and (method, path) not in READ_LIKE and not path.startswith(ROUTE)
    if changes and role() == "standby" and "user" in app.context:
        _status().mark_diverged(app.context["user"])
    return next_middleware(app)
