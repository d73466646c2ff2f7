"""The job dispatcher: one dispatch pass (hycloud_core.control.dispatch) per event.

Invoked when a relay or delta execution ends (its Step Functions status-change event), which
frees a worker, and every two minutes as a backstop; the controller runs the same pass inline when
it queues a job, so an idle system never waits for this function (docs/SCHEDULING.md).
"""

from __future__ import annotations

import os

import boto3

from hycloud_core.config import InstanceConfig
from hycloud_core.control.dispatch import dispatch_pass
from hycloud_core.observability import logger, observed
from hycloud_core.relay import execution_arn
from hycloud_core.store.queue_records import QueueStore, SchedConfig

CONFIG = InstanceConfig()
SCHED = SchedConfig.from_environment()
sfn = boto3.client("stepfunctions")
table = boto3.resource("dynamodb").Table(CONFIG.table)


def _status(machine: str, name: str) -> str:
    try:
        return sfn.describe_execution(executionArn=execution_arn(machine, name))["status"]
    except sfn.exceptions.ExecutionDoesNotExist:
        return "ABSENT"


def _start(machine: str, name: str, payload: str) -> None:
    try:
        sfn.start_execution(stateMachineArn=machine, name=name, input=payload)
    except sfn.exceptions.ExecutionAlreadyExists:
        pass


@observed
def handler(event: dict, context) -> dict:
    ended = (event.get("detail") or {}).get("name")
    store = QueueStore(table)
    if ended and store.release(ended):  # the event names the job: free its worker without asking
        logger.info("released", extra={"job": ended})
    result = dispatch_pass(store, _start, _status, os.environ.get("AWS_REGION", "home"), SCHED)
    return {
        "released": result.released,
        "started": [job for job, _ in result.started],
        "added": result.added,
        "retired": result.retired,
    }
