"""Cold small files packed into S3 segments (docs/SEGMENTS.md), over a temp dir (EFS), moto S3 and
the moto table: pack, read by range, rewrite, move/copy/delete, compact, and the races."""

from __future__ import annotations

import hashlib
import os
import shutil

import pytest

from hycloud_core import content
from hycloud_core.errors import NotFoundError
from hycloud_core.fs import segments, segments_read
from hycloud_core.fs.merkle_scan import namespace_tree
from hycloud_core.fs.segments_format import read_index, stub_from_bytes
from hycloud_core.fs.segments_records import RETIRED, SEALED, SegmentRecords
from hycloud_core.fs.version_copies import VersionCopies
from tests.conftest import MOTO_BUCKET

FILES = {f"/d/f{i}.txt": (f"file {i} ".encode() * (700 + 400 * i)) for i in range(4)}  # 4.9-13 KiB
PACK_ALL = segments.Settings(pack_after_s=0, grace_s=3600)


class RangeSpy:
    """The S3 client reads of packed files go through, recording each GET's range."""

    def __init__(self, s3) -> None:
        self.s3, self.ranges = s3, []
        self.exceptions = s3.exceptions

    def get_object(self, **kwargs):
        self.ranges.append((kwargs["Key"], kwargs.get("Range")))
        return self.s3.get_object(**kwargs)


@pytest.fixture
def cloud(moto_filesystems, monkeypatch):
    monkeypatch.setenv("HYCLOUD_BUCKET", MOTO_BUCKET)
    spy = RangeSpy(moto_filesystems.s3)
    monkeypatch.setattr(segments_read, "_s3", lambda: spy)
    m = moto_filesystems
    m.spy = spy
    alice = m.fs("alice")
    alice.mkdir("/d")
    for path, data in FILES.items():
        alice.put_small(path, data, hashlib.sha256(data).hexdigest())
    return m, alice


def run(m, settings=PACK_ALL, **kwargs) -> segments.Pass:
    return segments.run(m.records.table, m.s3, MOTO_BUCKET, str(m.root / "ns"), settings, **kwargs)


def put(fs, path: str, data: bytes) -> None:
    fs.put_small(path, data, hashlib.sha256(data).hexdigest())


def segment_keys(m) -> list[str]:
    listed = m.s3.list_objects_v2(Bucket=MOTO_BUCKET, Prefix="segments/")
    return sorted(o["Key"] for o in listed.get("Contents", []))


def test_pack_replaces_cold_files_by_stubs_read_back_by_range(cloud):
    m, alice = cloud
    tree_before = namespace_tree(alice.ns).hash
    assert run(m, segments.Settings(pack_after_s=3600), clean=False).packed_files == 0  # all in use
    done = run(m, clean=False)
    assert done.packed_files == 4 and done.packed_bytes == sum(map(len, FILES.values()))
    [key] = segment_keys(m)
    body = m.s3.get_object(Bucket=MOTO_BUCKET, Key=key)["Body"].read()
    assert sorted(member.path for member in read_index(body)) == sorted(FILES)
    for path, data in FILES.items():
        stub = alice.ns.segment_stub(path)
        assert stub is not None and stub.key == key and os.path.getsize(alice.ns.host(path)) < 400
        assert alice.ns.read(path) == data
        assert m.spy.ranges[-1] == (key, f"bytes={stub.offset}-{stub.offset + len(data) - 1}")
        entry = alice.ns.stat_hashed(path)
        assert (entry.storage, entry.size, entry.mode) == ("small", len(data), 0o640)
        assert entry.sha256 == hashlib.sha256(data).hexdigest()
        assert entry.content_hash == content.hash_bytes(data)
        assert alice.versions(path) == {entry.content_hash, entry.sha256}  # If-Match needs no GET
    assert [e.name for e in alice.ns.listdir("/d")[0]] == ["f0.txt", "f1.txt", "f2.txt", "f3.txt"]
    assert namespace_tree(alice.ns).hash == tree_before  # same content, same Merkle tree
    [record] = SegmentRecords(m.records.table, "alice").all()
    assert (record.state, record.live_share) == (SEALED, 1.0)


def test_a_file_holding_stub_bytes_is_data_not_a_stub(cloud):
    m, alice = cloud
    run(m, clean=False)
    raw = open(alice.ns.host("/d/f0.txt"), "rb").read()
    assert stub_from_bytes(raw) is not None
    put(alice, "/d/lookalike.json", raw)  # a user's file with a stub's bytes: no sticky bit
    assert alice.ns.segment_stub("/d/lookalike.json") is None
    assert alice.ns.read("/d/lookalike.json") == raw


def test_rewrite_puts_the_file_back_in_efs_and_its_segment_live_share_falls(cloud):
    m, alice = cloud
    run(m, clean=False)
    put(alice, "/d/f3.txt", b"new bytes")
    assert alice.ns.segment_stub("/d/f3.txt") is None
    assert open(alice.ns.host("/d/f3.txt"), "rb").read() == b"new bytes"
    done = run(m, segments.Settings(min_live_share=0.1), users=["alice"])
    total = sum(map(len, FILES.values()))
    [record] = SegmentRecords(m.records.table, "alice").all()
    assert record.live_bytes == total - len(FILES["/d/f3.txt"]) and done.compacted == []
    assert done.live[record.id] == pytest.approx(record.live_bytes / total)


def test_move_copy_and_delete_carry_the_stub(cloud):
    m, alice = cloud
    run(m, clean=False)
    [record] = SegmentRecords(m.records.table, "alice").all()
    alice.move("/d/f0.txt", "/d/moved.txt")
    alice.copy("/d/f1.txt", "/copy.txt")
    alice.delete("/d/f2.txt")
    assert SegmentRecords(m.records.table, "alice").get(record.id).touched > 0  # the cleaner is told
    assert alice.ns.read("/d/moved.txt") == FILES["/d/f0.txt"]
    assert alice.ns.read("/copy.txt") == FILES["/d/f1.txt"] == alice.ns.read("/d/f1.txt")
    assert not alice.ns.exists("/d/f2.txt")
    done = run(m, segments.Settings(min_live_share=0.1), users=["alice"])
    live = len(FILES["/d/f0.txt"]) + len(FILES["/d/f1.txt"]) + len(FILES["/d/f3.txt"])  # the copy counts once
    assert SegmentRecords(m.records.table, "alice").get(record.id).live_bytes == live and not done.compacted


def test_an_overwritten_packed_file_is_kept_as_a_version_with_its_bytes(cloud):
    m, alice = cloud
    alice.retain_s = 3600
    run(m, clean=False)
    put(alice, "/d/f1.txt", b"second version")
    [kept] = alice.history.listing("/d/f1.txt")
    assert VersionCopies(str(m.root / "ns"), "alice").read(kept.content_hash) == FILES["/d/f1.txt"]


def test_cleaner_compacts_a_segment_and_deletes_the_old_one_after_the_grace(cloud):
    m, alice = cloud
    run(m, clean=False)
    [old] = SegmentRecords(m.records.table, "alice").all()
    old_stub = alice.ns.segment_stub("/d/f0.txt")  # what a reader read just before the swap
    for path in ("/d/f1.txt", "/d/f2.txt", "/d/f3.txt"):
        put(alice, path, b"rewritten " + path.encode())
    done = run(m, users=["alice"], pack=False)  # 1/4 of the files, under a half of the bytes, live
    assert done.compacted == [old.id] and len(done.segments_written) == 1
    stub = alice.ns.segment_stub("/d/f0.txt")
    assert stub is not None and stub.segment == done.segments_written[0]
    assert alice.ns.read("/d/f0.txt") == FILES["/d/f0.txt"]
    assert SegmentRecords(m.records.table, "alice").get(old.id).state == RETIRED
    assert segments_read.read_member(old_stub) == FILES["/d/f0.txt"]  # the old stub still reads
    assert run(m, users=["alice"], pack=False).deleted == []  # within the grace
    gone = run(m, segments.Settings(grace_s=0), users=["alice"], pack=False)
    assert gone.deleted == [old.id] and segment_keys(m) == [stub.key]
    assert SegmentRecords(m.records.table, "alice").get(old.id) is None
    with pytest.raises(NotFoundError):
        segments_read.read_member(old_stub)
    for path in ("/d/f1.txt", "/d/f2.txt", "/d/f3.txt"):
        assert alice.ns.read(path) == b"rewritten " + path.encode()


def test_a_file_rewritten_during_compaction_keeps_its_new_bytes(cloud, monkeypatch):
    m, alice = cloud
    run(m, clean=False)
    put(alice, "/d/f3.txt", b"gone from the segment")
    put(alice, "/d/f2.txt", b"gone too")
    swap = segments.UserSegments._swap

    def rewrite_first(self, batch, stubs, out):  # the copy is made; the stubs are not swapped yet
        put(alice, "/d/f0.txt", b"written while the cleaner copied")
        return swap(self, batch, stubs, out)

    monkeypatch.setattr(segments.UserSegments, "_swap", rewrite_first)
    done = run(m, segments.Settings(grace_s=0), users=["alice"], pack=False)
    monkeypatch.setattr(segments.UserSegments, "_swap", swap)
    assert done.skipped_changed == 1 and len(done.compacted) == 1
    assert alice.ns.read("/d/f0.txt") == b"written while the cleaner copied"
    assert alice.ns.segment_stub("/d/f0.txt") is None
    assert alice.ns.read("/d/f1.txt") == FILES["/d/f1.txt"]
    assert alice.ns.segment_stub("/d/f1.txt").segment == done.segments_written[0]
    finished = run(m, segments.Settings(grace_s=0), users=["alice"], pack=False)
    assert finished.deleted == done.compacted
    assert alice.ns.read("/d/f1.txt") == FILES["/d/f1.txt"]


def test_a_file_rewritten_while_packed_is_not_swapped(cloud, monkeypatch):
    m, alice = cloud
    swap = segments.UserSegments._swap

    def rewrite_first(self, batch, stubs, out):
        put(alice, "/d/f1.txt", b"newer than the packed bytes")
        return swap(self, batch, stubs, out)

    monkeypatch.setattr(segments.UserSegments, "_swap", rewrite_first)
    done = run(m, clean=False)
    assert done.packed_files == 3 and done.skipped_changed == 1
    assert alice.ns.read("/d/f1.txt") == b"newer than the packed bytes"
    assert alice.ns.segment_stub("/d/f1.txt") is None


def test_stubs_found_naming_a_retired_segment_are_copied_out_again(cloud):
    """A stub the cleaner's walk missed (moved in behind it) keeps its bytes: the old segment is
    not deleted while a stub names it, and the next pass copies it out."""
    m, alice = cloud
    run(m, clean=False)
    hidden = open(alice.ns.host("/d/f0.txt"), "rb").read()
    for path in ("/d/f1.txt", "/d/f2.txt", "/d/f3.txt"):
        put(alice, path, b"x")
    run(m, users=["alice"], pack=False)  # compacts: f0's stub now names the new segment
    alice.ns.write("/missed.txt", hidden, mode=0o640 | 0o1000)  # the old stub, as if missed
    again = run(m, segments.Settings(grace_s=0), users=["alice"], pack=False)
    assert len(again.compacted) == 1 and again.deleted == []
    assert alice.ns.segment_stub("/missed.txt").segment == again.segments_written[0]
    assert alice.ns.read("/missed.txt") == FILES["/d/f0.txt"]


def test_only_files_packing_pays_for_are_packed(cloud):
    """One EFS block meters as much as a stub; from 128 KiB EFS's own Infrequent Access is cheaper."""
    m, alice = cloud
    put(alice, "/tiny.txt", b"t" * 4096)
    put(alice, "/tiered.bin", b"b" * (128 * 1024))
    assert run(m, clean=False).packed_files == 4
    assert alice.ns.segment_stub("/tiny.txt") is None and alice.ns.segment_stub("/tiered.bin") is None
    assert alice.ns.segment_stub("/d/f0.txt") is not None


def test_a_deleted_users_segments_are_deleted_and_its_namespace_not_made_again(cloud):
    m, alice = cloud
    run(m, clean=False)
    [record] = SegmentRecords(m.records.table, "alice").all()
    shutil.rmtree(alice.ns.root)  # what the user purge leaves
    assert run(m, segments.Settings(grace_s=0)).compacted == [record.id]  # none of it is live
    assert run(m, segments.Settings(grace_s=0)).deleted == [record.id]
    assert segment_keys(m) == [] and not os.path.exists(alice.ns.root)
