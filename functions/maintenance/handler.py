"""Relay cache upkeep, run on a schedule: evict least-recently-used files beyond the byte budget.

Files read within the last few minutes belong to a transfer in progress and are never evicted
(hycloud_core.fs.relay_cache). An event may pass {"budget": bytes} to override the budget.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from hycloud_core.config import InstanceConfig
from hycloud_core.fs.relay_cache import RelayCache

logger = Logger(service="hycloud-maintenance")
CONFIG = InstanceConfig()


@logger.inject_lambda_context
def handler(event: dict, context: object) -> dict:
    budget = (
        event.get("budget", CONFIG.relay_cache_bytes) if isinstance(event, dict) else CONFIG.relay_cache_bytes
    )
    cache = RelayCache(CONFIG.cache_dir)
    evicted = cache.evict(int(budget))
    remaining = sum(e.size for e in cache.entries())
    logger.info("cache upkeep", extra={"evicted": len(evicted), "remaining_bytes": remaining})
    return {"evicted": evicted, "remaining_bytes": remaining, "budget": int(budget)}
