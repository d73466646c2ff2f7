"""The standby's namespace job (scheduled, or invoked): `{}` runs a pass, `{"action": "pause"}` /
`"resume"` stop and restart it, `{"users": [id, ...]}` runs a pass over those users only,
`{"backfill": true}` also copies the records by scan (the stream carries them otherwise),
`"status"` reports the lag (hycloud_core/standby, docs/FAILOVER.md)."""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any

import boto3

from hycloud_core.config import InstanceConfig
from hycloud_core.standby.records_copy import object_copier
from hycloud_core.standby.replicate import Standby, run_pass
from hycloud_core.standby.status import ReplicationStatus

CONFIG = InstanceConfig()
ENV_STANDBY = "HYCLOUD_STANDBY"  # JSON: region, table, bucket, applyFunction


@cache
def _standby() -> Standby:
    target = json.loads(os.environ[ENV_STANDBY])
    region = target["region"]
    lam = boto3.client("lambda", region_name=region)

    def apply(user: str, ops: list[dict[str, Any]]) -> dict[str, Any]:
        answer = lam.invoke(
            FunctionName=target["applyFunction"], Payload=json.dumps({"user": user, "ops": ops})
        )
        result = json.loads(answer["Payload"].read())
        if "FunctionError" in answer:
            raise RuntimeError(f"standby apply failed: {result}")
        return result

    copy = object_copier(
        boto3.client("s3"), CONFIG.bucket, boto3.client("s3", region_name=region), target["bucket"]
    )
    return Standby(boto3.resource("dynamodb", region_name=region).Table(target["table"]), apply, copy)


def handler(event: dict | None, context: Any) -> dict[str, Any]:
    action = (event or {}).get("action", "pass")
    status = ReplicationStatus(boto3.resource("dynamodb").Table(CONFIG.table))
    if action in ("pause", "resume"):
        status.set_paused(action == "pause")
    elif action == "pass":
        event = event or {}
        return run_pass(
            status.table, CONFIG.namespaces_dir, _standby(), event.get("users"), bool(event.get("backfill"))
        )
    return status.report("primary")
