"""Usage from the DynamoDB table (moto): reference counts and the deployment-wide scan."""

from __future__ import annotations

import pytest

from hycloud_core.cost import load_prices
from hycloud_core.cost.records import deployment_usage, reference_counts
from tests.conftest import MOTO_BUCKET
from tests.unit.large_upload import upload_large

BUCKET = MOTO_BUCKET


@pytest.fixture
def env(moto_filesystems):
    m = moto_filesystems
    return m.fs, m.s3, m.records.table


def test_reference_counts_batches_and_skips_unknown(env, moto_filesystems, monkeypatch):
    fs, s3, table = env
    alice = fs("alice")
    hashes = [upload_large(alice, s3, BUCKET, bytes([i]) * 300, f"/f{i}") for i in range(5)]
    alice.copy("/f0", "/f0-copy")
    moto_filesystems.collect(grace_s=3600)  # counts the file records naming each object
    monkeypatch.setattr("hycloud_core.store.pages.BATCH_GET", 2)
    counts = reference_counts(table, [*hashes, "0" * 64])
    assert counts == {hashes[0]: 2, **{h: 1 for h in hashes[1:]}}


def test_deployment_scan_bills_shared_content_once(env):
    fs, s3, table = env
    shared, own = b"s" * 5000, b"o" * 7000
    alice, bob = fs("alice"), fs("bob")
    upload_large(alice, s3, BUCKET, shared, "/x")
    alice.copy("/x", "/x2")
    upload_large(bob, s3, BUCKET, shared, "/y")
    upload_large(bob, s3, BUCKET, own, "/z")
    alice.put_small("/small", b"t" * 100, "unused-sha")
    dep = deployment_usage(table)
    assert (dep.objects.s3_objects, dep.objects.s3_bytes, dep.objects.references) == (2, 12000, 4)
    assert dep.objects.s3_logical_bytes == 3 * 5000 + 7000
    everyone = dep.everyone.build()
    assert (everyone.s3_objects, everyone.s3_bytes, everyone.s3_logical_bytes) == (2, 12000, 22000)
    assert (everyone.efs_files, everyone.efs_bytes, everyone.link_files) == (1, 100, 4)
    per_user = {name: b.build() for name, b in dep.users.items()}
    assert per_user["alice"].s3_bytes == 5000 and per_user["bob"].s3_bytes == 12000
    assert sum(u.s3_bytes for u in per_user.values()) - everyone.s3_bytes == 5000  # the shared content
    report = dep.report(load_prices())
    assert set(report["users"]) == {"alice", "bob"} and report["objects"]["dedup_saved_bytes"] == 10000
    assert report["all_users"]["costs"]["hybrid"]["billed_bytes"]["s3"] == 12000
