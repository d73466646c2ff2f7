"""Starting and reporting relay and delta jobs (Step Functions executions) for the caller.

Which execution serves a job is decided by the job ledger (hycloud_core.job_ledger); this
module adds the Step Functions calls and turns an execution into what the caller may see.
A short job that needs nothing fetched first may instead run `direct`: the controller invokes
its function and waits (no workflow to start, schedule and poll), and keeps the outcome in
staging as the job's "execution" record.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from functools import cache

import boto3
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from botocore.config import Config
from context import CONFIG, records, sfn, user

from hycloud_core import jobs
from hycloud_core.errors import NotFoundError
from hycloud_core.job_ledger import JobLedger, submit
from hycloud_core.relay import execution_arn


@cache
def _lambda():
    return boto3.client("lambda", config=Config(read_timeout=30, retries={"max_attempts": 1}))


def _outcome_file(name: str) -> str:
    return jobs.staging_file(CONFIG.staging_dir, name, "outcome")


def invoke_now(function: str, name: str, payload: dict) -> None:
    """Run job `name` in its function now and record how it ended, as an execution would."""
    answer = _lambda().invoke(FunctionName=function, Payload=json.dumps({"job": name, **payload}).encode())
    output = answer["Payload"].read().decode()
    outcome = {"status": "SUCCEEDED", "output": output}
    if "FunctionError" in answer:
        outcome = {"status": "FAILED", "error": (json.loads(output or "{}") or {}).get("errorType")}
    os.makedirs(CONFIG.staging_dir, exist_ok=True)
    target = _outcome_file(name)
    tmp = f"{target}.{uuid.uuid4().hex}.tmp"  # a concurrent request may run the same job
    with open(tmp, "w") as f:
        json.dump(outcome, f)
    os.replace(tmp, target)


def describe(machine: str, name: str) -> dict | None:
    try:
        with open(_outcome_file(name)) as f:
            return json.load(f)  # it ran direct
    except FileNotFoundError:
        pass
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
    direct: str | None = None,
) -> str:
    """The execution serving job `key` for the caller, started (with `payload`) when needed; with
    `direct` (a function name) the job runs in that function before this returns."""

    def status(name: str) -> str:
        desc = describe(machine, name)
        return desc["status"] if desc else "ABSENT"

    def launch(name: str) -> None:
        stage(name)
        if direct:
            invoke_now(direct, name, payload)
            return
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
