"""Following a tree job the API started (202): long polls, progress in files, and the outcome.

The job runs in the cloud whatever the client does, so the client never claims more than the
job says: on success it returns; on failure it raises TreeJobFailed saying how far the job got
and how to resume; if interrupted it raises TreeJobDetached saying the job goes on.
"""

from __future__ import annotations

from hycloud_core.errors import HyCloudError

from ..http import Transport
from ..transfer import Progress
from ..transfer.jobs import JobPoll, follow_job

POLL_WAIT_S = 2.0  # each status request is held this long at most, so progress stays fresh
VERBS = {"copy": "copy", "move": "move", "remove": "removal"}


class TreeJobFailed(HyCloudError):
    """The job stopped before the end; the tree is as `job`'s counts say."""

    def __init__(self, job: dict) -> None:
        error = job.get("error") or {}
        reason = error.get("message") or job["state"]
        super().__init__(
            f"{describe(job)} stopped after {_files(job)} ({reason}); run the same command to resume",
            code=error.get("code") or "job-failed",
            status=error.get("status") or 409,
        )
        self.job = job


class TreeJobDetached(KeyboardInterrupt):
    """Interrupted while following a job, which goes on in the cloud."""

    def __init__(self, job: dict) -> None:
        super().__init__()
        self.job = job
        self.message = (
            f"interrupted: the {describe(job)} goes on in the cloud ({_files(job)} so far); "
            "run the same command to follow it"
        )


def describe(job: dict) -> str:
    if job.get("op") == "empty":
        return "emptying of the trash"
    what = VERBS.get(job.get("op", ""), "job")
    return f"{what} of {job['src']}" + (f" to {job['dst']}" if job.get("dst") else "")


def _files(job: dict) -> str:
    total = job.get("total")
    return f"{job['done']:,} of {total:,} files" if total is not None else f"{job['done']:,} files"


def _report(progress: Progress | None, job: dict) -> None:
    total = job.get("total")
    if progress is None or total is None:
        return
    if progress.total != total:
        progress.start(describe(job), total)
    progress.done = job["done"]
    progress.update(job["done"], total)


def _queued(progress: Progress | None, job: dict) -> bool:
    """Say once where the job waits when the cloud queued it (its FOP queue place)."""
    place = job.get("queue")
    if place and progress is not None:
        progress.note(
            f"{describe(job)}: queued at position {place['position']},"
            f" estimated start in {place['estimated_start_s']:.0f} s"
        )
    return bool(place)


def follow(http: Transport, job: dict, progress: Progress | None = None) -> dict:
    """Poll the job until it ends; its final status, or TreeJobFailed / TreeJobDetached."""
    seen, noted = [job], [False]

    def show(status: dict) -> None:
        seen[0] = status
        if status["state"] == "running" and not noted[0]:
            noted[0] = _queued(progress, status)
        _report(progress, status)

    try:
        job = follow_job(http, JobPoll("/v1/tree-jobs", {"id": job["job"]}, POLL_WAIT_S), job, show)
    except KeyboardInterrupt:
        raise TreeJobDetached(seen[0]) from None
    if job["state"] != "succeeded":
        raise TreeJobFailed(job)
    return job
