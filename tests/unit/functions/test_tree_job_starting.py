"""A tree job a worker has taken off the FOP queue but whose execution has not started yet is still
running, however long a loaded dispatcher takes to start it (it was once recorded as stopped after
10 s: the CLI said "queued at position 1", then "stopped after 0 of 101 files")."""

from __future__ import annotations

import importlib
import time

import boto3
import pytest

from hycloud_core.store.tree_jobs import TreeJob
from tests.conftest import load_function

TABLE, BUCKET = "hycloud-test", "hycloud-content"
MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:tree"


@pytest.fixture
def tree_jobs(stores, monkeypatch):
    monkeypatch.setenv("HYCLOUD_TREE_STATE_MACHINE_ARN", MACHINE)
    load_function("controller")
    return importlib.import_module("services.tree_ops"), boto3.resource("dynamodb").Table(TABLE)


def _job(updated_ago_s: float) -> TreeJob:
    job = TreeJob("u-1", "remove-abc", "remove", "/big", None, ["/big"])
    job.updated = time.time() - updated_ago_s
    return job


def _queue_item(table, job: TreeJob, state: str, since_ago_s: float) -> None:
    started_us = round((time.time() - since_ago_s) * 1e6)
    table.put_item(
        Item={"pk": "FOPJ", "sk": job.execution, "state": state, "user": job.user, "started_us": started_us}
    )


def test_a_job_a_worker_took_is_running_until_its_execution_starts(tree_jobs):
    routes, table = tree_jobs
    job = _job(updated_ago_s=60)  # recorded a minute ago: longer than STARTING_S
    _queue_item(table, job, "running", since_ago_s=30)  # claimed by a worker, not started yet
    assert routes._execution_running(job)


def test_a_job_waiting_in_the_queue_is_running(tree_jobs):
    routes, table = tree_jobs
    job = _job(updated_ago_s=600)
    _queue_item(table, job, "queued", since_ago_s=600)
    assert routes._execution_running(job)


def test_a_job_neither_queued_nor_started_is_stopped(tree_jobs):
    routes, table = tree_jobs
    assert not routes._execution_running(_job(updated_ago_s=60))  # the queue forgot it: stopped
    job = _job(updated_ago_s=600)
    _queue_item(table, job, "running", since_ago_s=600)  # a worker that never started it
    assert not routes._execution_running(job)
