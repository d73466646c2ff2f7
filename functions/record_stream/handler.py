"""The stream replicator: the primary table's stream (users, keys, user ids, objects, usage)
applied to the standby's table, in order, with partial-batch failures
(hycloud_core/standby/record_stream.py, docs/FAILOVER.md)."""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any

import boto3

from hycloud_core import reach
from hycloud_core.config import InstanceConfig
from hycloud_core.standby.record_stream import apply_batch, record_batch
from hycloud_core.standby.records_copy import object_copier
from hycloud_core.standby.status import ReplicationStatus

CONFIG = InstanceConfig()
ENV_STANDBY = "HYCLOUD_STANDBY"  # JSON: region, table, bucket, applyFunction


@cache
def _target() -> tuple[Any, Any]:
    """The standby's table and the content copier into its bucket."""
    target = json.loads(os.environ[ENV_STANDBY])
    region = target["region"]
    table = reach.resource("dynamodb", region).Table(target["table"])
    copy = object_copier(boto3.client("s3"), CONFIG.bucket, reach.client("s3", region), target["bucket"])
    return table, copy


def handler(event: dict, context: Any) -> dict[str, Any]:
    table, copy = _target()
    done = apply_batch(event.get("Records", []), table, copy, ReplicationStatus(table).diverged())
    if done.errors:
        print(json.dumps({"stream_failed_at": done.failed_at, "errors": done.errors[:3]}))
    record_batch([table, boto3.resource("dynamodb").Table(CONFIG.table)], done)
    failures = [{"itemIdentifier": done.failed_at}] if done.failed_at else []
    return {"batchItemFailures": failures}
