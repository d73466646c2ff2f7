"""Tree jobs (copy, move, removal of large trees): one step per invocation, looped by the workflow.

Event: a TreeStepSpec (hycloud_core.jobs.specs: the controller's TreeJobSpec {"user", "id"} and
the workflow's "execution"), parsed on entry; a step answers {"user", "id", "state"}. With
"action": "fail" (the workflow's Catch, after a step ended in an unexpected error) it records the
failure with a plain message and releases the job's leases. Stack traces stay in the logs.
"""

from __future__ import annotations

import boto3

from hycloud_core.config import InstanceConfig
from hycloud_core.fs import FileSystem
from hycloud_core.fs.tree_job import Budget, TreeJobStep
from hycloud_core.jobs.specs import TreeStepSpec
from hycloud_core.observability import job_duration, logger, observed
from hycloud_core.store.records import Records
from hycloud_core.store.tree_jobs import RUNNING, Superseded, TreeJobs

CONFIG = InstanceConfig()
s3 = boto3.client("s3")
UNEXPECTED = "the job stopped on an unexpected error"


def _step(spec: TreeStepSpec) -> TreeJobStep | None:
    """The step for this execution, or None when the job is no longer this execution's."""
    records = Records(CONFIG.table)
    jobs = TreeJobs(records.table)
    job = jobs.get(spec.user, spec.id)
    if job is None or job.execution != spec.execution or job.state != RUNNING:
        return None
    fs = FileSystem.deployed(CONFIG, job.user, s3, records)
    return TreeJobStep(fs, jobs, job, Budget.of(CONFIG.tree_step_s, CONFIG.tree_step_entries))


@observed
def handler(event: dict, context: object) -> dict:
    spec = TreeStepSpec.from_event(event)  # a malformed event fails here, naming what is wrong
    answer = {"user": spec.user, "id": spec.id}
    step = _step(spec)
    if step is None:
        return {**answer, "state": "superseded"}
    try:
        if spec.failed:
            logger.error("tree job failed", extra={"job": spec.id, "error": spec.error})
            step.fail("job-failed", UNEXPECTED, 500)
            return {**answer, "state": step.job.state}
        with job_duration("tree-step"):
            state = step.run()
    except Superseded:
        return {**answer, "state": "superseded"}
    logger.info("tree job step", extra={"job": spec.id, "state": state, "done": step.job.done})
    return {**answer, "state": state}
