"""Tree jobs (copy, move, removal of large trees): one step per invocation, looped by the workflow.

Event: {"user", "id", "execution"} runs a step and answers {"user", "id", "state"}; with
"action": "fail" (the workflow's Catch, after a step ended in an unexpected error) it records the
failure with a plain message and releases the job's leases. Stack traces stay in the logs.
"""

from __future__ import annotations

import boto3

from hycloud_core.config import InstanceConfig
from hycloud_core.fs import FileSystem
from hycloud_core.fs.tree_job import Budget, TreeJobStep
from hycloud_core.observability import job_duration, logger, observed
from hycloud_core.store.records import Records
from hycloud_core.store.tree_jobs import RUNNING, Superseded, TreeJobs

CONFIG = InstanceConfig()
s3 = boto3.client("s3")
UNEXPECTED = "the job stopped on an unexpected error"


def _step(event: dict) -> TreeJobStep | None:
    """The step for this execution, or None when the job is no longer this execution's."""
    records = Records(CONFIG.table)
    jobs = TreeJobs(records.table)
    job = jobs.get(event["user"], event["id"])
    if job is None or job.execution != event["execution"] or job.state != RUNNING:
        return None
    fs = FileSystem.deployed(CONFIG, job.user, s3, records)
    return TreeJobStep(fs, jobs, job, Budget.of(CONFIG.tree_step_s, CONFIG.tree_step_entries))


@observed
def handler(event: dict, context: object) -> dict:
    answer = {"user": event["user"], "id": event["id"]}
    step = _step(event)
    if step is None:
        return {**answer, "state": "superseded"}
    try:
        if event.get("action") == "fail":
            logger.error("tree job failed", extra={"job": event["id"], "error": event.get("error")})
            step.fail("job-failed", UNEXPECTED, 500)
            return {**answer, "state": step.job.state}
        with job_duration("tree-step"):
            state = step.run()
    except Superseded:
        return {**answer, "state": "superseded"}
    logger.info("tree job step", extra={"job": event["id"], "state": state, "done": step.job.done})
    return {**answer, "state": state}
