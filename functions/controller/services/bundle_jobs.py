"""Bundle jobs: the commit of a bundle staged in S3, queued in FOP order as a transfer and run by
the bundle function (functions/bundle), and what its caller sees of it."""

from __future__ import annotations

import json
import os

from context import CONFIG, records, s3

from hycloud_core import constants as c
from hycloud_core import jobs
from hycloud_core.fs.bundle_commit import staged_size
from hycloud_core.jobs.queue import QueueEntry, QueueStore
from hycloud_core.jobs.specs import BundleJobSpec

from . import job_queue, job_runs


def queue_staged(caller: str, staged: str, parents: bool, root: str) -> dict:
    """Queue the commit of a staged bundle in FOP order: t_T is its bytes at the in-cloud rate;
    it holds a path marker on `root`, so jobs on related paths keep request order."""
    size = staged_size(s3(), CONFIG.bucket, caller, staged)
    name = jobs.new_bundle_job()
    spec = BundleJobSpec(job=name, user=caller, staged=staged, root=root, parents=parents)
    store = QueueStore(records().table)
    config = store.config(job_queue.SCHED)
    machine = os.environ[c.ENV_BUNDLE_STATE_MACHINE]
    entry = QueueEntry(
        job=name,
        machine=machine,
        input=json.dumps(spec.to_event()),
        user=caller,
        paths=(root,),
        size=size,
        seconds_per_byte=1.0 / CONFIG.s3_efs_rate,
    )
    store.enqueue(entry, config)
    job_queue.pump(config)
    return state_of(name, caller) or {"job": name, "state": "running"}


def state_of(job: str, caller: str) -> dict | None:
    """The caller's bundle job: queued (its place), running, or ended with per-member results."""
    outcome = jobs.load_outcome(CONFIG.staging_dir, job)
    if outcome is not None:
        return {"job": job, **outcome, "user": None} if outcome.get("user") == caller else None
    state = job_queue.queue_state(job, caller)
    if state is not None:
        return {"job": job, **state} if state else None
    desc = job_runs.describe(os.environ[c.ENV_BUNDLE_STATE_MACHINE], job)
    if desc is None or json.loads(desc.get("input") or "{}").get("user") != caller:
        return None
    if desc["status"] == "RUNNING":
        return {"job": job, "state": "running"}
    return {"job": job, "state": "failed", "error": {**jobs.failure(desc.get("error")), "status": 500}}
