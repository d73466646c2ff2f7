"""Usage of packed cold small files (docs/SEGMENTS.md), over a temp dir (EFS), moto S3 and the moto
table: a packed file counts at its own size with its bytes in S3 segments and its stub in EFS, the
storage classes add up to each store's bytes, and the bill moves the bytes from EFS to S3."""

from __future__ import annotations

import hashlib
import os

import pytest

from hycloud.cli import usage as cli
from hycloud_core.cost import compare, load_prices, measure_namespace
from hycloud_core.cost import metering as m
from hycloud_core.cost.records import user_usage_from_records, with_segment_records
from hycloud_core.cost.tiers import tiered_cost
from hycloud_core.fs import segments
from hycloud_core.fs.segments_records import SegmentRecords
from tests.conftest import MOTO_BUCKET

KiB = 1024
FILES = {f"/d/f{i}.txt": os.urandom(5000 + 7919 * i) for i in range(4)}  # 4.9-28 KiB
PLAIN = b"not cold: written again below"
P = load_prices()


@pytest.fixture
def packed(moto_filesystems, monkeypatch):
    """Alice's four files packed into one segment; one more written after the pass stays in EFS."""
    monkeypatch.setenv("HYCLOUD_BUCKET", MOTO_BUCKET)
    m_ = moto_filesystems
    alice = m_.fs("alice")
    alice.mkdir("/d")
    for path, data in FILES.items():
        alice.put_small(path, data, hashlib.sha256(data).hexdigest())
    before, _ = measure_namespace(alice.ns, "alice")
    settings = segments.Settings(pack_after_s=0, grace_s=3600)
    done = segments.run(m_.records.table, m_.s3, MOTO_BUCKET, str(m_.root / "ns"), settings, clean=False)
    assert done.packed_files == len(FILES)
    alice.put_small("/plain.txt", PLAIN, hashlib.sha256(PLAIN).hexdigest())
    return m_, alice, before


def test_packed_files_count_their_bytes_in_s3_segments_and_stubs_in_efs(packed):
    m_, alice, before = packed
    usage, _ = measure_namespace(alice.ns, "alice")
    stubs = [os.path.getsize(alice.ns.host(p)) for p in FILES]
    assert (usage.efs_files, usage.efs_bytes) == (1, len(PLAIN))  # the stubs are not small files
    assert (usage.segment_files, usage.segment_objects) == (4, 1)
    assert usage.segment_bytes == usage.segment_stored_bytes == sum(map(len, FILES.values()))
    assert usage.segment_stub_bytes == sum(stubs) and max(stubs) < 512
    assert usage.segment_stub_metered_bytes == 4 * (2 * KiB + 4 * KiB)
    assert usage.efs_data_metered_bytes == 4 * KiB  # /plain.txt only
    assert usage.files == before.files + 1 and usage.logical_bytes == before.logical_bytes + len(PLAIN)
    assert usage.s3_stored_bytes == usage.segment_stored_bytes and usage.s3_objects == 0
    assert usage.segment_efs_data_bytes == sum(m.efs_data_bytes(len(d)) for d in FILES.values())
    assert usage.s3files_small_files == 5  # all under S3 Files' 128 KiB import threshold


def test_segment_records_give_the_stored_bytes_dead_members_included(packed):
    m_, alice, _ = packed
    [record] = SegmentRecords(m_.records.table, "alice").all()
    rewritten = FILES["/d/f3.txt"]
    alice.put_small("/d/f3.txt", b"back in EFS", hashlib.sha256(b"back in EFS").hexdigest())
    alice.copy("/d/f0.txt", "/copy.txt")  # a copied stub names the same member: stored once
    walked, _ = measure_namespace(alice.ns, "alice")
    assert walked.segment_files == 4 and walked.segment_bytes == record.total_bytes - len(rewritten) + 5000
    assert walked.segment_stored_bytes == record.total_bytes - len(rewritten)  # live members, once
    stored = with_segment_records(walked, m_.records.table, "alice")
    assert (stored.segment_objects, stored.segment_stored_bytes) == (1, record.total_bytes)
    assert stored.segment_bytes == walked.segment_bytes  # logical bytes as the user sees them
    nobody = with_segment_records(walked, m_.records.table, "bob")  # no records: the walk's figures
    assert (nobody.segment_objects, nobody.segment_stored_bytes) == (0, 0)


def test_storage_classes_add_up_and_say_why_packed_files_are_in_s3(packed):
    m_, alice, _ = packed
    usage = with_segment_records(measure_namespace(alice.ns, "alice")[0], m_.records.table, "alice").to_dict()
    rows = cli.class_rows(usage)
    efs = sum(nbytes for name, _, _, nbytes in rows if name.startswith("EFS"))
    s3 = sum(nbytes for name, _, _, nbytes in rows if name.startswith("S3"))
    assert (
        efs == usage["efs_metered_bytes"] and s3 == usage["s3_stored_bytes"] == usage["segment_stored_bytes"]
    )
    by_why = {why.split(":")[0]: (name, n, nbytes) for name, why, n, nbytes in rows}
    assert by_why["stubs of packed files"] == ("EFS Standard", 4, 4 * 6 * KiB)
    assert by_why["small files unused 7+ days, packed"] == (
        "S3 segments (Intelligent-Tiering)",
        1,
        sum(map(len, FILES.values())),
    )


def test_the_bill_charges_packed_bytes_at_s3_and_stubs_at_efs(packed):
    m_, alice, before = packed
    usage = with_segment_records(measure_namespace(alice.ns, "alice")[0], m_.records.table, "alice")
    hybrid, was = compare(usage, P)["hybrid"], compare(before, P)["hybrid"]
    gb, stored = P.gb, usage.segment_stored_bytes
    assert hybrid.lines["s3_data"] == pytest.approx(gb(stored) * P["s3_storage_gb_month"])
    assert hybrid.billed_bytes["s3"] == stored and hybrid.billed_bytes["efs"] == usage.efs_metered_bytes
    assert hybrid.lines["efs_data"] < was.lines["efs_data"]
    assert hybrid.logical_bytes == before.logical_bytes + len(PLAIN)
    all_efs = compare(usage, P)["all-efs"]
    assert all_efs.billed_bytes["efs"] > compare(before, P)["all-efs"].billed_bytes["efs"]  # + /plain.txt
    tiered = tiered_cost(usage, P)
    assert tiered.lines["s3_data"] < hybrid.lines["s3_data"]  # segments are under the tiering rule
    assert tiered.lines["s3_monitoring_data"] > 0


RECORDED = (
    "files",
    "efs_files",
    "efs_bytes",
    "efs_data_metered_bytes",
    "segment_files",
    "segment_bytes",
    "segment_stub_metered_bytes",
    "segment_objects",
    "segment_stored_bytes",
    "s3_stored_bytes",
)


def _both(m_, alice) -> tuple:
    walked, _ = measure_namespace(alice.ns, "alice")
    recorded, _ = user_usage_from_records(m_.records, "alice")
    table = m_.records.table
    return with_segment_records(walked, table, "alice"), with_segment_records(recorded, table, "alice")


def test_records_count_packed_files_as_the_walk_does(packed):
    """`GET /v1/usage?source=records`: a packed file's record says so (the pack marks it), so the
    records count it as the walk does, and a rewrite, a move and a compaction keep them agreeing."""
    m_, alice, _ = packed
    walked, recorded = _both(m_, alice)
    assert (recorded.segment_files, recorded.efs_files) == (4, 1)
    assert [getattr(recorded, k) for k in RECORDED] == [getattr(walked, k) for k in RECORDED]

    data = b"rewritten: in EFS again"
    alice.put_small("/d/f0.txt", data, hashlib.sha256(data).hexdigest())
    alice.move("/d/f1.txt", "/f1.txt")
    settings = segments.Settings(pack_after_s=None, min_live_share=0.99, grace_s=3600)
    segments.run(m_.records.table, m_.s3, MOTO_BUCKET, str(m_.root / "ns"), settings, pack=False)
    walked, recorded = _both(m_, alice)
    assert (recorded.segment_files, recorded.efs_files) == (3, 2)
    assert [getattr(recorded, k) for k in RECORDED] == [getattr(walked, k) for k in RECORDED]


def test_the_reconciler_marks_a_packed_files_record(packed):
    """A record written before packing marked files (or lost) is made right from the stub."""
    from hycloud_core.fs.reconcile import reconcile_all

    m_, alice, _ = packed
    for path in FILES:
        item = m_.records.get_file("alice", path)
        m_.records.put_file("alice", path, **{k: item[k] for k in ("kind", "size", "sha256")})
    assert user_usage_from_records(m_.records, "alice")[0].segment_files == 0
    reconcile_all(m_.records, str(m_.root / "ns"), grace_s=0)
    assert user_usage_from_records(m_.records, "alice")[0].segment_files == 4
