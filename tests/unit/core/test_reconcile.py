"""Upkeep's record repair leaves alone what a running operation (a tree job) holds a lease on."""

from __future__ import annotations

from hycloud_core.fs.reconcile import reconcile_user
from hycloud_core.store.locks import Lease


def test_paths_under_a_held_lease_are_left_for_the_next_round(moto_filesystems):
    fs = moto_filesystems.fs("u")
    for path in ("/busy/a", "/free/a"):
        fs.ns.write(path, b"on EFS, no record yet", parents=True)
    job = Lease(fs.records.table, "u", owner="job-1")
    job.acquire("/busy", 1)
    out = reconcile_user(fs.records, fs.ns, "u", grace_s=0)
    assert out.records_written == ["/free/a"]
    job.release()
    assert reconcile_user(fs.records, fs.ns, "u", grace_s=0).records_written == ["/busy/a"]
