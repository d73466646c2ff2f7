"""The standby's side of replication: applies a batch of one user's ops to its EFS and table
(hycloud_core/standby/apply.py)."""

from __future__ import annotations

from typing import Any

import boto3

from hycloud_core.config import InstanceConfig
from hycloud_core.fs.operations import FileSystem
from hycloud_core.standby.apply import apply_ops
from hycloud_core.store.quotas import Quota
from hycloud_core.store.records import Records

CONFIG = InstanceConfig()


def handler(event: dict, context: Any) -> dict[str, Any]:
    user = event["user"]
    records, s3 = Records(CONFIG.table), boto3.client("s3")
    quota = Quota(None, user)  # usage counters come from the primary by the stream
    fs = FileSystem.deployed(CONFIG, user, s3, records, quota=quota)
    return apply_ops(fs, event["ops"])
