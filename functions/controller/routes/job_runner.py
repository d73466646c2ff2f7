"""Starting and reporting relay and delta jobs (Step Functions executions) for the caller.

Which execution serves a job is decided by the job ledger (hycloud_core.job_ledger); this
module adds the Step Functions calls and turns an execution into what the caller may see.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import records, sfn, user

from hycloud_core import jobs
from hycloud_core.errors import NotFoundError
from hycloud_core.job_ledger import JobLedger, submit
from hycloud_core.relay import execution_arn


def describe(machine: str, name: str) -> dict | None:
    try:
        return sfn().describe_execution(executionArn=execution_arn(machine, name))
    except sfn().exceptions.ExecutionDoesNotExist:
        return None


def run(
    router: APIGatewayRouter,
    machine: str,
    key: str,
    payload: dict,
    result_alive: Callable[[str], bool],
    stage: Callable[[str], None],
) -> str:
    """The execution serving job `key` for the caller, started (with `payload`) when needed."""

    def status(name: str) -> str:
        desc = describe(machine, name)
        return desc["status"] if desc else "ABSENT"

    def launch(name: str) -> None:
        stage(name)
        try:
            sfn().start_execution(
                stateMachineArn=machine, name=name, input=json.dumps({"job": name, **payload})
            )
        except sfn().exceptions.ExecutionAlreadyExists:
            pass  # a concurrent request launched this very attempt

    return submit(JobLedger(records().table, user(router)), key, status, result_alive, launch)


def owned(router: APIGatewayRouter, job: str) -> str:
    """The job id if it names an attempt at one of the caller's jobs, else 404 (same for all others)."""
    record = JobLedger(records().table, user(router)).get(jobs.key_of(job))
    if record is None or int(job.rsplit("-", 1)[1]) > record.attempt:
        raise NotFoundError("no such job", code="no-such-job")
    return job


def report(desc: dict | None) -> dict:
    """What the caller sees of an execution: its state, its output when done, a short error when not."""
    if desc is None or desc["status"] == "RUNNING":
        return {"state": "running"}  # absent: its launch is on its way
    if desc["status"] == "SUCCEEDED":
        return {"state": "ready", "result": json.loads(desc.get("output") or "{}")}
    return {"state": "failed", "error": jobs.failure(desc.get("error"))}
