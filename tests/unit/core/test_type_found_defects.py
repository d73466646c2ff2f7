"""Paths where a None the types allow reached code that did not expect it (found by mypy)."""

from __future__ import annotations

import pytest

from hycloud_core.fs.tree_job import Budget, TreeJobStep
from hycloud_core.store.locks import Lease
from hycloud_core.store.quotas import Change, Limits, Quota
from hycloud_core.store.tree_jobs import RUNNING, SUCCEEDED, TreeJob, TreeJobs, job_id


@pytest.mark.parametrize("delta", [Change(5, 1), Change(-5, -1)], ids=["growth", "decrease"])
def test_a_quota_without_records_counts_no_change(delta):
    """`Quota(None, ...)` (the standby's file system) counts nothing: its `change` is a no-op, as
    `writing`, `removing` and the others are (it read and wrote the records' table, which it has none of)."""
    quota = Quota(None, "u", Limits(bytes=1, files=1))
    with quota.change(delta):
        pass
    quota.give_back(delta)


def test_a_tree_copy_writes_no_record_for_a_file_gone_since_its_copy(moto_filesystems):
    """A copied file removed before its record is written gets no record (its record was None,
    and the page's write failed with a TypeError); the others get theirs."""
    fs = moto_filesystems.fs("u")
    for name in ("a", "b", "c"):
        fs.put_small(f"/t/{name}", name.encode(), sha256="x", parents=True)
    jobs = TreeJobs(fs.records.table)
    job = TreeJob("u", job_id("copy", "/t", "/c"), "copy", "/t", "/c", ["/t", "/c"])
    lease = Lease(fs.records.table, "u", owner=job.owner)
    for path in job.leases:
        lease.acquire(path, 1)
    assert jobs.create(job)
    copy_page = fs.copy_page

    def copy_then_lose_one(src, dst, page):
        made = copy_page(src, dst, page)
        if "/c/b" in made:
            fs.ns.unlink("/c/b")  # as a removal between the copy and its record would
        return made

    fs.copy_page = copy_then_lose_one
    while job.state == RUNNING:
        job = jobs.get("u", job.id)
        TreeJobStep(fs, jobs, job, Budget.of(60, 100)).run()
    assert jobs.get("u", job.id).state == SUCCEEDED
    assert sorted(r["path"] for r in fs.records.files_under("u", "/c")) == ["/c/a", "/c/c"]
