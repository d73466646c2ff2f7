"""Repair job step: rebuild one user's coded blocks on a lost or replaced instance, a slice at a time.

Event {"action": "sweep", "grace_s"?} instead reclaims blocks no link file names (coded_sweep).

Event: {"user", "region", "cursor"?, "checked"?, "rebuilt"?, "unrecoverable"?, "files"?}; answers
the same with "state" ("running": the workflow runs the next slice from "cursor"; "succeeded").
The step runs in the home region and reaches every instance's bucket (docs/GEO.md).
"""

from __future__ import annotations

import time
from dataclasses import asdict
from functools import cache

import boto3

from hycloud_core.coded_layout import CodedLayout
from hycloud_core.coded_repair import RepairCount, repair_file
from hycloud_core.coded_sweep import sweep_blocks
from hycloud_core.config import InstanceConfig
from hycloud_core.fs import Namespace
from hycloud_core.fs.blocks import BlockStore
from hycloud_core.instances import from_environment
from hycloud_core.observability import logger, observed
from hycloud_core.store.records import Records

CONFIG = InstanceConfig()
SLICE_S = 20.0


@cache
def _s3(region: str):
    return boto3.client("s3", region_name=region)


def _coded_paths(user: str) -> list[str]:
    files = Records(CONFIG.table).files_under(user, "/")
    return sorted(item["sk"][2:] for item in files if item.get("kind") == "large")


def sweep(event: dict) -> dict:
    """Reclaim blocks no link names, in every bucket (hourly, and on demand)."""
    grace = float(event.get("grace_s", CONFIG.gc_grace_s))
    result = sweep_blocks(BlockStore(from_environment(), _s3), CONFIG.namespaces_dir, grace)
    logger.info("block sweep", extra={"listed": result.listed, "deleted": sum(result.deleted.values())})
    return {"state": "succeeded", **asdict(result)}


@observed
def handler(event: dict, context: object) -> dict:
    if event.get("action") == "sweep":
        return sweep(event)
    user, region = event["user"], event["region"]
    store = BlockStore(from_environment(), _s3)
    if region not in store.buckets:
        return {**event, "state": "failed", "error": f"no instance in {region}"}
    ns = Namespace(CONFIG.namespaces_dir, user)
    count = RepairCount(*(int(event.get(k, 0)) for k in ("checked", "rebuilt", "unrecoverable")))
    files, cursor = int(event.get("files", 0)), int(event.get("cursor", 0))
    todo, deadline = _coded_paths(user), time.monotonic() + SLICE_S
    while cursor < len(todo) and time.monotonic() < deadline:
        link = ns.current_link(todo[cursor])
        cursor += 1
        if link is None or not link.erasure:
            continue
        files += 1
        count.add(repair_file(CodedLayout.from_dict(link.erasure), region, store))
    state = "running" if cursor < len(todo) else "succeeded"
    logger.info("repair step", extra={"region": region, "cursor": cursor, "rebuilt": count.rebuilt})
    return {
        "user": user,
        "region": region,
        "cursor": cursor,
        "files": files,
        "checked": count.checked,
        "rebuilt": count.rebuilt,
        "unrecoverable": count.unrecoverable,
        "state": state,
    }
