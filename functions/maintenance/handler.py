"""Upkeep, run on a schedule: relay-cache eviction, expired old versions, stale delta staging files.

Cache files read within the last few minutes belong to a transfer in progress and are never
evicted (hycloud_core.fs.relay_cache). An event may pass {"budget": bytes} to override the budget.
"""

from __future__ import annotations

import os
import time

import boto3
from aws_lambda_powertools import Logger

from hycloud_core.config import InstanceConfig
from hycloud_core.fs.relay_cache import RelayCache
from hycloud_core.store.objects import Objects
from hycloud_core.store.records import Records

logger = Logger(service="hycloud-maintenance")
CONFIG = InstanceConfig()
STAGING_MAX_AGE_S = 86400


def _clean_staging(now: float) -> int:
    removed = 0
    if not os.path.isdir(CONFIG.staging_dir):
        return 0
    with os.scandir(CONFIG.staging_dir) as it:
        for entry in it:
            if entry.is_file() and now - entry.stat().st_mtime > STAGING_MAX_AGE_S:
                os.unlink(entry.path)
                removed += 1
    return removed


@logger.inject_lambda_context
def handler(event: dict, context: object) -> dict:
    event = event if isinstance(event, dict) else {}
    budget = int(event.get("budget", CONFIG.relay_cache_bytes))
    cache = RelayCache(CONFIG.cache_dir)
    evicted = cache.evict(budget)
    remaining = sum(e.size for e in cache.entries())
    records = Records(CONFIG.table)
    purged = Objects(records.table, boto3.client("s3"), CONFIG.bucket).purge_expired()
    staged = _clean_staging(time.time())
    logger.info("upkeep", extra={"evicted": len(evicted), "purged": len(purged), "staging_removed": staged})
    return {
        "evicted": evicted,
        "remaining_bytes": remaining,
        "budget": budget,
        "purged": purged,
        "staging_removed": staged,
    }
