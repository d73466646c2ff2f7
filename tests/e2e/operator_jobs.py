"""The operator's coded-block jobs (whole-instance repair, ring migration), queued through the
dispatcher function as docs/GEO.md says, and followed to their end."""

from __future__ import annotations

import json
import time

from hycloud_core.jobs.executions import execution_arn


def run_operator_job(deployment, outputs: dict[str, str], job_input: dict, timeout_s: float = 420) -> dict:
    """Queue `job_input` on the home instance's repair machine; its final execution description.
    The bound is generous: the job waits its turn in the dispatcher's queue and walks every coded
    file and block the suite's earlier tests left (52 s alone; over 180 s once in a full run here)."""
    answer = deployment.client("lambda").invoke(
        FunctionName=outputs["DispatcherFunctionName"], Payload=json.dumps({"queue": job_input}).encode()
    )
    queued = json.loads(answer["Payload"].read())
    assert "FunctionError" not in answer and queued.get("job"), queued
    sfn, arn = (
        deployment.client("stepfunctions"),
        execution_arn(outputs["RepairStateMachineArn"], queued["job"]),
    )
    deadline, status = time.monotonic() + timeout_s, {"status": "QUEUED"}
    while time.monotonic() < deadline:
        try:
            status = sfn.describe_execution(executionArn=arn)
        except sfn.exceptions.ExecutionDoesNotExist:  # still queued behind other work
            status = {"status": "QUEUED"}
        if status["status"] not in ("RUNNING", "QUEUED"):
            return status
        time.sleep(0.2)
    raise AssertionError(
        f"operator job {queued['job']} did not finish in {timeout_s:.0f} s: {status['status']}"
    )
