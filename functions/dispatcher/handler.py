"""The job dispatcher: one dispatch pass (hycloud_core.jobs.dispatch) per event.

Invoked when a relay or delta execution ends (its Step Functions status-change event), which
frees a worker, and every two minutes as a backstop; the controller runs the same pass inline when
it queues a job, so an idle system never waits for this function (docs/SCHEDULING.md).

The operator queues a coded-block job over every user's files here: `{"queue": <repair step
input>}`, e.g. `{"queue": {"region": "eu-west-1"}}` (a whole-instance repair) or `{"queue":
{"action": "migrate", "instances": [...]}}` (docs/GEO.md); the answer names its execution.
"""

from __future__ import annotations

import os

import boto3

from hycloud_core.config import InstanceConfig
from hycloud_core.constants import ENV_REPAIR_STATE_MACHINE
from hycloud_core.jobs import executions
from hycloud_core.jobs.coded import CodedJob, queue_coded_job
from hycloud_core.jobs.dispatch import Dispatcher
from hycloud_core.jobs.queue import QueueStore, SchedConfig
from hycloud_core.jobs.specs import coded_block_spec
from hycloud_core.observability import logger, observed

CONFIG = InstanceConfig()
SCHED = SchedConfig.from_environment()
table = boto3.resource("dynamodb").Table(CONFIG.table)
INSTANCE = os.environ.get("AWS_REGION", "home")


def _queue_operator_job(job_input: dict) -> dict:
    """Queue the job if its input is a coded-block spec (SpecError, naming the key, if not)."""
    spec = coded_block_spec(job_input)
    store = QueueStore(table)
    config = store.config(SCHED)
    coded = CodedJob(
        machine=os.environ[ENV_REPAIR_STATE_MACHINE], input=spec.to_event(), rate_bps=CONFIG.s3_efs_rate
    )
    name = queue_coded_job(store, coded, config)
    Dispatcher(store, executions.start, instance=INSTANCE).run(config)
    return {"job": name, "queue": store.position(name)}


@observed
def handler(event: dict, context) -> dict:
    if isinstance(event.get("queue"), dict):
        return _queue_operator_job(event["queue"])
    ended = (event.get("detail") or {}).get("name")
    store = QueueStore(table)
    if ended and store.release(ended):  # the event names the job: free its worker without asking
        logger.info("released", extra={"job": ended})
    result = Dispatcher(store, executions.start, executions.status, INSTANCE).run(store.config(SCHED))
    return {
        "released": result.released,
        "started": [job for job, _ in result.started],
        "added": result.added,
        "retired": result.retired,
    }
