"""Repair jobs a user asks for: their coded blocks on one instance rebuilt from the others, a
job on the repair state machine queued as background work (hycloud_core/jobs/coded.py), started
in FOP order, and what the caller sees of it."""

from __future__ import annotations

import json
import os
from functools import cache

from context import CONFIG, records

from hycloud_core import constants as c
from hycloud_core import reach
from hycloud_core.cost.records import user_usage_from_records
from hycloud_core.errors import ConflictError
from hycloud_core.jobs.coded import CodedJob, queue_coded_job
from hycloud_core.jobs.executions import execution_arn
from hycloud_core.jobs.queue import QueueStore
from hycloud_core.jobs.specs import RepairStep

from . import job_queue


@cache
def _sfn():
    return reach.client("stepfunctions")


def _repair_machine() -> str:
    arn = os.environ.get(c.ENV_REPAIR_STATE_MACHINE)
    if not arn:
        raise ConflictError("repair needs several instances (hycloud:regions)", code="no-repair")
    return arn


def queue_repair(caller: str, region: str) -> dict:
    """Queue the repair of the caller's blocks at `region`; its state as the caller sees it."""
    store = QueueStore(records().table)
    config = store.config(job_queue.SCHED)
    held = user_usage_from_records(records(), caller)[0].coded_region_bytes.get(region, 0)
    coded = CodedJob(
        machine=_repair_machine(),
        input=RepairStep(region=region, user=caller).to_event(),
        rate_bps=CONFIG.s3_efs_rate,
        user=caller,
        nbytes=held,  # what it checks there
    )
    name = queue_coded_job(store, coded, config)
    job_queue.pump(config)
    return state_of(name, caller) or {"job": name, "state": "running"}


def state_of(job: str, caller: str) -> dict | None:
    """The caller's repair job: its place while queued, then its execution's state; None if neither."""
    queued = job_queue.queue_state(job, caller)
    if queued and queued["state"] == "queued":
        return {"job": job, **queued}
    try:
        run = _sfn().describe_execution(executionArn=execution_arn(_repair_machine(), job))
    except _sfn().exceptions.ExecutionDoesNotExist:
        return {"job": job, "state": "running"} if queued else None
    if json.loads(run["input"]).get("user") != caller:
        return None
    state = {"RUNNING": "running", "SUCCEEDED": "succeeded"}.get(run["status"], "failed")
    result = json.loads(run["output"]) if run.get("output") else None
    return {"job": job, "state": state, **({"result": result} if result else {})}
