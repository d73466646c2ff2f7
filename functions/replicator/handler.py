"""The standby's namespace job (scheduled, or invoked): `{}` runs a pass, `{"action": "pause"}` /
`"resume"` stop and restart it, `{"users": [id, ...]}` runs a pass over those users only,
`{"backfill": true}` also copies the records by scan (the stream carries them otherwise),
`{"budget_s": s}` stops starting users after s seconds (a pass stops before the timeout anyway
and the next invocation continues it: `"complete": false` in the answer),
`"status"` reports the lag (hycloud_core/standby, docs/FAILOVER.md)."""

from __future__ import annotations

import json
import os
import time
from functools import cache
from typing import Any

import boto3

from hycloud_core import reach
from hycloud_core.config import InstanceConfig
from hycloud_core.standby.records_copy import object_copier
from hycloud_core.standby.replicate import Budget, Standby, run_pass
from hycloud_core.standby.status import ReplicationStatus

CONFIG = InstanceConfig()
MARGIN_S = 120.0  # no new user started this close to the invocation's timeout
ENV_STANDBY = "HYCLOUD_STANDBY"  # JSON: region, table, bucket, applyFunction


@cache
def _standby() -> Standby:
    target = json.loads(os.environ[ENV_STANDBY])
    region = target["region"]
    lam = reach.client("lambda", region)

    def apply(user: str, ops: list[dict[str, Any]]) -> dict[str, Any]:
        answer = lam.invoke(
            FunctionName=target["applyFunction"], Payload=json.dumps({"user": user, "ops": ops})
        )
        result = json.loads(answer["Payload"].read())
        if "FunctionError" in answer:
            raise RuntimeError(f"standby apply failed: {result}")
        return result

    copy = object_copier(boto3.client("s3"), CONFIG.bucket, reach.client("s3", region), target["bucket"])
    return Standby(reach.resource("dynamodb", region).Table(target["table"]), apply, copy)


def _budget(event: dict[str, Any], context: Any) -> Budget:
    """Stop starting users before the invocation's time runs out (or after `budget_s`, which a
    test uses to see a pass continue where it stopped)."""
    left = context.get_remaining_time_in_millis() / 1000 - MARGIN_S if context else None
    if event.get("budget_s") is not None:
        left = float(event["budget_s"]) if left is None else min(left, float(event["budget_s"]))
    return Budget(None if left is None else time.monotonic() + max(0.0, left))


def handler(event: dict | None, context: Any) -> dict[str, Any]:
    action = (event or {}).get("action", "pass")
    status = ReplicationStatus(boto3.resource("dynamodb").Table(CONFIG.table))
    if action in ("pause", "resume"):
        status.set_paused(action == "pause")
    elif action == "pass":
        event = event or {}
        return run_pass(
            status.table,
            CONFIG.namespaces_dir,
            _standby(),
            event.get("users"),
            bool(event.get("backfill")),
            _budget(event, context),
        )
    return status.report("primary")
