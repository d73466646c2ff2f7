"""Following a Step Functions execution of the deployment to its end, for the tests that read
its final state (a job is answered ready at its commit, before its execution's last state)."""

from __future__ import annotations

import time


def finished(sfn, arn: str, timeout_s: float = 60, poll_s: float = 0.5) -> dict:
    """The execution's description once it has left RUNNING; fails after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while (desc := sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
        assert time.monotonic() < deadline, f"{arn} still running after {timeout_s:g} s"
        time.sleep(poll_s)
    return desc
