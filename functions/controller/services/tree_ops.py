"""Copy, move and recursive removal of large trees as jobs: starting, following and resuming them.

A move runs inline whatever the tree holds (one rename on EFS, one folder entry and the two
chains of Merkle nodes above its ends), once the namespace's records are keyed by folder id; a
namespace still being migrated moves large trees as jobs, as copies always are.
A tree with more entries than the inline limit (a bounded walk counts them) is handed to the tree
workflow: the request takes the job's subtree leases, checks the operation as the inline one
would, and answers 202 with the job. Submitting the same operation again while it runs answers
the same job (a retried POST never races its own job); after it failed or stopped, the same
submission resumes it from its cursor. A smaller tree is the caller's to run inline.
"""

from __future__ import annotations

import time

from context import CONFIG, records, sfn

from hycloud_core import paths
from hycloud_core.errors import NotFoundError
from hycloud_core.fs import FileSystem, Namespace
from hycloud_core.fs.snapshots import Restoring, Snapshots
from hycloud_core.fs.tree_walk import count
from hycloud_core.jobs.executions import execution_arn
from hycloud_core.jobs.queue import QueueStore
from hycloud_core.store.locks import WAIT_S, Lease
from hycloud_core.store.snapshot_records import Snapshot
from hycloud_core.store.tree_jobs import (
    APPLY,
    EMPTY,
    RENAME,
    RESTORE,
    RUNNING,
    SNAPSHOT,
    STOPPED,
    Superseded,
    TreeJob,
    TreeJobs,
    job_id,
)
from services.job_queue import copied_bytes, queue_tree, waiting

COUNT_S = 5.0  # the request counts a tree's files for this long; the job counts the rest
STARTING_S = 10  # a job recorded this recently may not have its execution yet
DISPATCH_S = 120  # a job a worker took off the queue this recently is being started


def submit(fs: FileSystem, op: str, src: str, dst: str | None, expect: str | None) -> TreeJob | None:
    """The job that runs (or resumes) this operation in the user's `fs`; None when the tree is
    small enough to run inline, which the caller then does."""
    src, dst = paths.normalize(src), dst and paths.normalize(dst)
    jobs, who = TreeJobs(records().table), fs.user
    job = jobs.get(who, job_id(op, src, dst))
    if job and (job.state == RUNNING or job.resumable):
        return _follow_or_resume(jobs, job)
    if op == "move" and fs.records.dirs.migrated(fs.user):
        return None  # O(depth) whatever the tree holds (store/merkle_records.py): always inline
    if not _large(fs.ns, src):
        return None
    leases = [src] if dst is None else [src, dst]
    return _start(fs, jobs, TreeJob(who, job_id(op, src, dst), op, src, dst, leases), expect)


def empty_trash(fs: FileSystem) -> TreeJob:
    """The user's emptying job (fs/trash.py `drain`), started, or followed while it runs: it
    takes items emptied meanwhile too. One that missed an item (it ended just as the item was
    emptied) leaves it to upkeep's purge."""
    jobs, id = TreeJobs(records().table), job_id(EMPTY, "/", None)
    job = jobs.get(fs.user, id)
    if job and (job.state == RUNNING or job.resumable):
        return _follow_or_resume(jobs, job)
    job = TreeJob(fs.user, id, EMPTY, "/", None, leases=[])
    if not jobs.create(job):  # started by another request a moment ago
        return _get(jobs, fs.user, id)
    _execute(job)
    return job


def make_snapshot(fs: FileSystem, snap: Snapshot) -> TreeJob:
    """The job that copies the rest of a snapshot being made (fs/snapshots.py) and makes it
    ready; its lease on the folder is the snapshot's own, held apart (fs/snapshot_copy.py)."""
    jobs = TreeJobs(records().table)
    job = TreeJob(fs.user, job_id(SNAPSHOT, snap.path, snap.id), SNAPSHOT, snap.path, snap.name, leases=[])
    job.phase = APPLY
    if not jobs.create(job):
        return _get(jobs, fs.user, job.id)
    _execute(job)
    return job


def restore_snapshot(fs: FileSystem, plan: Restoring, to: str | None) -> TreeJob:
    """The job that restores a snapshot's tree of many entries (fs/snapshots.py `restore_page`),
    started, or followed while it runs; the destination is leased by it and checked free first."""
    jobs = TreeJobs(records().table)
    job = TreeJob(fs.user, job_id(RESTORE, plan.src, plan.dst), RESTORE, plan.src, plan.dst, [plan.dst])
    job.snapshot, job.phase = plan.snap.name, APPLY
    found = jobs.get(fs.user, job.id)
    if found and (found.state == RUNNING or found.resumable):
        return _follow_or_resume(jobs, found)
    if not jobs.create(job):
        return _get(jobs, fs.user, job.id)
    lease = Lease(records().table, job.user, owner=job.owner)
    try:
        _acquire(lease, job)
        Snapshots(fs).check_free(plan.dst, to)
    except BaseException:
        lease.release()
        jobs.forget(job)
        raise
    _execute(job)
    return job


def reconcile(who: str, id: str) -> None:
    """Record as stopped a job whose execution ended without saying so (before it is followed)."""
    jobs = TreeJobs(records().table)
    _reconciled(jobs, _get(jobs, who, id))


def current(who: str, id: str) -> dict:
    """A job's answer as its record has it now."""
    return answer(_get(TreeJobs(records().table), who, id))


def answer(job: TreeJob) -> dict:
    """The job's status, with its place while it waits in the FOP queue."""
    place = waiting(job.execution) if job.state == RUNNING else None
    return {**job.status(), **({"queue": place} if place else {})}


def _large(ns: Namespace, path: str) -> bool:
    """Whether `path` is a folder with more entries than run inline (a bounded count)."""
    limit = CONFIG.tree_inline_limit
    if not ns.exists(path) or ns.stat(path).type != "dir":
        return False
    return count(ns, path, None, time.monotonic() + COUNT_S, limit=limit + 1)[1] > limit


def _start(fs: FileSystem, jobs: TreeJobs, job: TreeJob, expect: str | None) -> TreeJob:
    if not jobs.create(job):  # the same operation was submitted a moment ago
        return _get(jobs, job.user, job.id)
    lease = Lease(records().table, job.user, owner=job.owner)
    try:
        _acquire(lease, job)
        fs.check_tree_operation(job.op, job.src, job.dst, expect)
        _count(fs.ns, job)
        jobs.save(job)
    except Superseded:  # taken over by a resubmission meanwhile
        return _get(jobs, job.user, job.id)
    except BaseException:
        lease.release()
        jobs.forget(job)
        raise
    _execute(job, copied_bytes(fs.ns, job.src, job.counted) if job.op == "copy" else 0)
    return job


def _acquire(lease: Lease, job: TreeJob) -> None:
    for path in sorted(job.leases, key=lambda p: [c for c in p.split("/") if c]):
        lease.acquire(path, WAIT_S)


def _count(ns: Namespace, job: TreeJob) -> None:
    """Count the files now if it is quick, so the first answer has the total."""
    files, _, job.cursor = count(ns, job.src, None, time.monotonic() + COUNT_S)
    job.counted = files
    if job.cursor is None:
        job.files, job.phase = files, RENAME if job.op == "move" else APPLY


def _follow_or_resume(jobs: TreeJobs, job: TreeJob) -> TreeJob:
    job = _reconciled(jobs, job)
    return job if job.state == RUNNING else _resume(jobs, job)


def _reconciled(jobs: TreeJobs, job: TreeJob) -> TreeJob:
    """A job whose execution ended without saying so (stopped, timed out) is recorded as stopped.

    Its leases are left to expire: a step of it may still be finishing its last batch.
    """
    if job.state != RUNNING or _execution_running(job):
        return job
    attempt, job.state = job.attempt, STOPPED
    job.error = {"code": "job-stopped", "message": "the job was stopped", "status": 409}
    return job if jobs.claim(job, RUNNING, attempt) else _get(jobs, job.user, job.id)


def _resume(jobs: TreeJobs, job: TreeJob) -> TreeJob:
    lease = Lease(records().table, job.user, owner=job.owner)
    try:
        _acquire(lease, job)
    except BaseException:
        lease.release()
        raise
    state, attempt = job.state, job.attempt
    job.state, job.error, job.attempt = RUNNING, None, attempt + 1
    if job.op == "remove" and job.phase == APPLY:
        job.cursor = None  # what it walked is gone; walking again also finds what came since
    job.execution = job.execution_name()
    if not jobs.claim(job, state, attempt):  # another request resumed it first
        return _get(jobs, job.user, job.id)
    _execute(job)
    return job


def _execute(job: TreeJob, nbytes: int = 0) -> None:
    queue_tree(CONFIG.tree_state_machine, job, nbytes)  # FOP queue: started now when idle


def _execution_running(job: TreeJob) -> bool:
    """Whether the job's execution runs (or, just submitted, is about to)."""
    try:
        desc = sfn().describe_execution(executionArn=execution_arn(CONFIG.tree_state_machine, job.execution))
    except sfn().exceptions.ExecutionDoesNotExist:
        return time.time() - job.updated < STARTING_S or _queued_or_being_started(job)
    return desc["status"] == "RUNNING"


def _queued_or_being_started(job: TreeJob) -> bool:
    """Waiting in the FOP queue, or taken off it by a worker that has yet to start its execution:
    a loaded dispatcher can take longer than STARTING_S between the two. One read of its item."""
    item = QueueStore(records().table).job(job.execution)
    if item is None:
        return False
    if item["state"] == "queued":
        return True
    return time.time() - int(item.get("started_us", 0)) / 1e6 < DISPATCH_S


def _get(jobs: TreeJobs, who: str, id: str) -> TreeJob:
    job = jobs.get(who, id)
    if job is None:
        raise NotFoundError(f"no tree job {id}", code="no-such-job")
    return job
