"""How many Lambda executions the deployment's jobs may hold at once, from the account's quota.

Lambda's concurrent executions are a per-region quota of the account: 1,000 in an established
account, but AWS may give a new one 10 until it asks for more. A relay job holds up to the
relay workflow's range Map concurrency (relay_fetch.asl.json, 8) at once, and the dispatcher
keeps up to `max workers` jobs running (16 kept, 32 at most by default), so the defaults need
8 x 32 executions plus the controller's: far above 10, and throttled requests would fail the API.

`hycloud:accountConcurrency` (default 10, the lowest quota AWS gives; set it to the region's
quota once raised) sets the budget: KEPT executions stay free for the controller and the
dispatcher, and the jobs share the rest: the Map takes at most half of it (so that two jobs run at
once, a short one not waiting behind a long one), and the workers are as many such jobs as fit
(10: 2 workers of up to 4 ranges at once; 1,000: the usual 16 kept, 32 at most, Map 8). Settings given explicitly (`hycloud:jobCapacity`,
`hycloud:maxRelayWorkers`) win. The local cloud (account 000000000000) has no quota: unless the
budget is given, its settings stay the app's own.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Stack
from constructs import Construct

from hycloud_core.jobs.queue import SchedConfig

DEFAULT_ACCOUNT_CONCURRENCY = 10
KEPT = 2  # the controller answering a request, the dispatcher starting the next job
RELAY_MAP_CONCURRENCY = 8  # relay_fetch.asl.json's CopyRanges
LOCAL_ACCOUNT = "000000000000"


@dataclass(frozen=True)
class JobBudget:
    capacity: int | None  # None: the app's own default (SchedConfig)
    max_workers: int | None
    map_concurrency: int


def job_budget(scope: Construct) -> JobBudget:
    value = scope.node.try_get_context("hycloud:accountConcurrency")
    if value is None and Stack.of(scope).account == LOCAL_ACCOUNT:
        return JobBudget(None, None, RELAY_MAP_CONCURRENCY)
    total = DEFAULT_ACCOUNT_CONCURRENCY if value is None else int(value)
    jobs = max(1, total - KEPT)
    per_job = min(RELAY_MAP_CONCURRENCY, max(1, jobs // 2))
    fit = max(1, jobs // per_job)
    defaults = SchedConfig()
    return JobBudget(
        capacity=min(defaults.capacity, fit),
        max_workers=min(defaults.max_workers, fit),
        map_concurrency=per_job,
    )
