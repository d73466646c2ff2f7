"""The operator's coded-block jobs (whole-instance repair, ring migration), queued through the
dispatcher function as docs/GEO.md says, and followed to their end."""

from __future__ import annotations

import json
import time

from hycloud_core.relay import execution_arn


def run_operator_job(deployment, outputs: dict[str, str], job_input: dict, timeout_s: float = 180) -> dict:
    """Queue `job_input` on the home instance's repair machine; its final execution description."""
    answer = deployment.client("lambda").invoke(
        FunctionName=outputs["DispatcherFunctionName"], Payload=json.dumps({"queue": job_input}).encode()
    )
    queued = json.loads(answer["Payload"].read())
    assert "FunctionError" not in answer and queued.get("job"), queued
    sfn, arn = (
        deployment.client("stepfunctions"),
        execution_arn(outputs["RepairStateMachineArn"], queued["job"]),
    )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            status = sfn.describe_execution(executionArn=arn)
        except sfn.exceptions.ExecutionDoesNotExist:  # still queued behind other work
            status = {"status": "QUEUED"}
        if status["status"] not in ("RUNNING", "QUEUED"):
            return status
        time.sleep(0.2)
    raise AssertionError(f"operator job {queued['job']} did not finish")
