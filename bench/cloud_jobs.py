"""Waiting for the cloud's own jobs (a commit starts the delta from the version it superseded) to end
before a measurement: on this one machine they would share its two cores with the transfer measured
next, which on AWS they do not. A job may wait in the FOP queue before its execution starts, so both
the queue and the running executions must be empty. A delta upload's version settles in S3 after
the upload's answer (a settle job, not an execution): `await_settled` waits for that."""

from __future__ import annotations

import time

import boto3

from hycloud_core.jobs.queue import QueueStore
from hycloud_core.store.objects import Objects


class CloudJobs:
    def __init__(self, machine: str, table: str) -> None:
        self.sfn, self.machine = boto3.client("stepfunctions"), machine
        self.table = boto3.resource("dynamodb").Table(table)
        self.queue = QueueStore(self.table)

    def busy(self) -> bool:
        running = self.sfn.list_executions(stateMachineArn=self.machine, statusFilter="RUNNING")
        return bool(running["executions"]) or next(self.queue.head(1), None) is not None

    def settle(self, timeout: float = 120) -> None:
        """Return once no job is queued or running (or after `timeout` seconds)."""
        deadline = time.monotonic() + timeout
        while self.busy() and time.monotonic() < deadline:
            time.sleep(0.1)

    def await_settled(self, content_hash: str, timeout: float = 120) -> None:
        """Return once the content's record no longer says `settling` (Settling after `timeout`)."""
        Objects(self.table, None, "").await_settled(content_hash, wait_s=timeout)
