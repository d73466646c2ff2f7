"""Tree job steps (moto): small budgets force many steps; each resumes where the last one saved."""

from __future__ import annotations

import hashlib
import time

import pytest

from hycloud_core.errors import ConflictError
from hycloud_core.fs.tree_job import Budget, TreeJobStep
from hycloud_core.store.collector import tree_epoch
from hycloud_core.store.locks import Lease, leased_paths, path_leases
from hycloud_core.store.tree_jobs import FAILED, RUNNING, SUCCEEDED, TreeJob, TreeJobs, job_id


@pytest.fixture
def fs(moto_filesystems):
    fs = moto_filesystems.fs("u")
    for d in range(3):
        for f in range(5):
            fs.put_small(f"/t/d{d}/f{f}", f"{d}-{f}".encode(), sha256="x", parents=True)
    return fs


def _job(fs, op: str, src: str, dst: str | None) -> tuple[TreeJobs, TreeJob]:
    jobs = TreeJobs(fs.records.table)
    job = TreeJob("u", job_id(op, src, dst), op, src, dst, [src] if dst is None else [src, dst])
    lease = Lease(fs.records.table, "u", owner=job.owner)
    for path in job.leases:
        lease.acquire(path, 1)
    assert jobs.create(job)
    return jobs, job


def _run_to_end(fs, jobs: TreeJobs, job: TreeJob, entries: int) -> int:
    steps = 0
    while job.state == RUNNING:
        job = jobs.get("u", job.id)
        TreeJobStep(fs, jobs, job, Budget.of(60, entries)).run()
        steps += 1
    return steps


def _files(fs, path: str) -> dict[str, bytes]:
    return {e.path[len(path) :]: fs.ns.read(e.path) for e in fs.ns.walk_files(path)}


def test_copy_in_many_steps_copies_every_file_and_record(fs):
    jobs, job = _job(fs, "copy", "/t", "/c")
    assert _run_to_end(fs, jobs, job, entries=4) > 5
    done = jobs.get("u", job.id)
    assert (done.state, done.files, done.done) == (SUCCEEDED, 15, 15)
    assert _files(fs, "/c") == _files(fs, "/t")
    records = {r["path"][len("/c") :]: r["sha256"] for r in fs.records.files_under("u", "/c")}
    assert records == {p: hashlib.sha256(data).hexdigest() for p, data in _files(fs, "/c").items()}
    assert leased_paths(fs.records.table, "u") == []


def test_remove_in_many_steps_leaves_no_file_folder_or_record(fs):
    jobs, job = _job(fs, "remove", "/t", None)
    _run_to_end(fs, jobs, job, entries=3)
    assert (jobs.get("u", job.id).state, jobs.get("u", job.id).done) == (SUCCEEDED, 15)
    assert not fs.ns.exists("/t") and fs.records.files_under("u", "/t") == []


def test_move_renames_once_then_moves_records_in_pages(fs):
    fs.put_small("/t/d0/f0", b"new", sha256="y")  # a record to move
    epoch = tree_epoch(fs.records.table)
    jobs, job = _job(fs, "move", "/t", "/m")
    _run_to_end(fs, jobs, job, entries=2)
    assert jobs.get("u", job.id).state == SUCCEEDED
    assert tree_epoch(fs.records.table) == epoch + 1
    assert not fs.ns.exists("/t") and fs.ns.read("/m/d0/f0") == b"new"
    assert fs.records.files_under("u", "/t") == [] and fs.records.get_file("u", "/m/d0/f0")["sha256"] == "y"


def test_a_lost_lease_fails_the_job_with_a_message_and_a_later_step_can_resume(fs):
    jobs, job = _job(fs, "copy", "/t", "/c")
    while jobs.get("u", job.id).done == 0:
        TreeJobStep(fs, jobs, jobs.get("u", job.id), Budget.of(60, 6)).run()
    fs.records.table.put_item(
        Item={"pk": "LOCK#u", "sk": "/c", "owner": "other", "expires": int(time.time()) + 60}
    )
    state = TreeJobStep(fs, jobs, jobs.get("u", job.id), Budget.of(60, 6)).run()
    failed = jobs.get("u", job.id)
    assert state == FAILED and failed.error["code"] == "busy" and "/c" in failed.error["message"]
    assert 0 < failed.done < 15
    fs.records.table.delete_item(Key={"pk": "LOCK#u", "sk": "/c"})
    failed.state, failed.attempt = RUNNING, failed.attempt + 1  # what a resubmission does
    failed.execution = failed.execution_name()
    assert jobs.claim(failed, FAILED, failed.attempt - 1)
    Lease(fs.records.table, "u", owner=failed.owner).acquire("/c", 1)
    Lease(fs.records.table, "u", owner=failed.owner).acquire("/t", 1)
    _run_to_end(fs, jobs, failed, entries=6)
    assert jobs.get("u", job.id).state == SUCCEEDED and _files(fs, "/c") == _files(fs, "/t")


def test_renew_refuses_an_expired_lease(moto_filesystems, monkeypatch):
    table = moto_filesystems.records.table
    with path_leases(table, "u", ["/a"]) as lease:
        lease.renew()
        now = time.time()
        monkeypatch.setattr(time, "time", lambda: now + 120)
        with pytest.raises(ConflictError):
            lease.renew()


def test_copies_count_against_the_quota_page_by_page_and_removals_free_it(fs):
    fs.quota.set_limits(max_files=15 + 8)  # room for 8 of the 15 copies
    jobs, job = _job(fs, "copy", "/t", "/c")
    _run_to_end(fs, jobs, job, entries=4)
    stopped = jobs.get("u", job.id)
    assert (stopped.state, stopped.error["code"]) == (FAILED, "quota-exceeded")
    assert stopped.done == len(list(fs.ns.walk_files("/c"))) <= 8
    assert fs.quota.report()["files"]["used"] == 15 + stopped.done
    jobs, job = _job(fs, "remove", "/c", None)
    _run_to_end(fs, jobs, job, entries=4)
    assert fs.quota.report()["files"]["used"] == 15
