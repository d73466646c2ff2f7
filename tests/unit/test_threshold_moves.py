"""Files crossing the small-file threshold move between EFS and S3 (fs/threshold_moves.py), over a
temp dir (EFS), moto S3 and the moto table: bytes, hashes, time, mode, versions and the Merkle tree
are the same after a move both ways; passes are bounded and resume at their cursor; a busy file
or a bad object is left as it is."""

from __future__ import annotations

import hashlib
import os
import time

import pytest

from hycloud_core import content
from hycloud_core.fs import segments, segments_read
from hycloud_core.fs import threshold_moves as tm
from hycloud_core.fs.merkle_scan import namespace_tree
from hycloud_core.store.locks import path_leases
from tests.conftest import MOTO_BUCKET

NOW_PLUS = 10 * 86400  # the passes below run "later": every file has settled


@pytest.fixture
def cloud(moto_filesystems, monkeypatch):
    monkeypatch.setenv("HYCLOUD_BUCKET", MOTO_BUCKET)
    monkeypatch.setattr(segments_read, "_s3", lambda: moto_filesystems.s3)
    alice = moto_filesystems.fs("alice")
    alice.retain_s = 3600
    alice.mkdir("/d")
    return moto_filesystems, alice


def put(fs, path: str, data: bytes, mode: int | None = None):
    return fs.put_small(path, data, hashlib.sha256(data).hexdigest(), mode=mode, mtime=1_700_000_000.5)


def later(m, threshold: int, **kw) -> tm.Moves:
    """A pass at a time when every file has settled."""
    settings = tm.MoveSettings(threshold, **kw)
    return tm.run(m.records, m.objects, str(m.root / "ns"), settings, now=time.time() + NOW_PLUS)


def read(fs, path: str) -> bytes:
    """The file's bytes wherever they are: EFS, a segment, or the object its link names."""
    if fs.ns.stat(path).storage == "small":
        return fs.ns.read(path)
    key = content.object_key(fs.ns.read_link(path).content_hash)
    return fs.s3.get_object(Bucket=MOTO_BUCKET, Key=key)["Body"].read()


def seen(fs, path: str) -> tuple:
    e = fs.ns.stat_hashed(path)
    return read(fs, path), e.content_hash, e.sha256, e.mtime, e.mode, e.size


def test_a_file_crosses_both_ways_and_keeps_bytes_hashes_time_mode_versions_and_tree(cloud):
    m, alice = cloud
    old, data = os.urandom(30_000), os.urandom(50_000)
    put(alice, "/d/f.bin", old)
    put(alice, "/d/f.bin", data, mode=0o755)  # the first version is kept
    before = seen(alice, "/d/f.bin")
    versions = [v.version for v in alice.history.listing("/d/f.bin")]
    tree = namespace_tree(alice.ns).hash

    done = later(m, threshold=40_000)  # the threshold falls under the file: to S3
    assert (done.to_s3, done.to_efs, done.moved_bytes) == (1, 0, len(data))
    assert alice.ns.stat("/d/f.bin").storage == "large"
    assert seen(alice, "/d/f.bin") == before
    link = alice.ns.read_link("/d/f.bin")
    assert link.content_hash == content.hash_bytes(data) and link.sha256 == before[2]
    assert m.records.get_file("alice", "/d/f.bin")["kind"] == "large"
    assert namespace_tree(alice.ns).hash == tree
    assert [v.version for v in alice.history.listing("/d/f.bin")] == versions
    assert later(m, threshold=40_000).to_s3 == 0  # nothing left to move

    done = later(m, threshold=2 << 20)  # raised over it: back to EFS
    assert (done.to_s3, done.to_efs) == (0, 1)
    assert alice.ns.stat("/d/f.bin").storage == "small"
    assert seen(alice, "/d/f.bin") == before
    assert m.records.get_file("alice", "/d/f.bin")["kind"] == "small"
    assert namespace_tree(alice.ns).hash == tree
    assert [v.version for v in alice.history.listing("/d/f.bin")] == versions
    alice.history.restore("/d/f.bin")  # the kept version still restores
    assert alice.ns.read("/d/f.bin") == old


def test_a_file_changed_lately_waits_until_it_settles(cloud):
    m, alice = cloud
    put(alice, "/d/f.bin", os.urandom(50_000))
    settings = tm.MoveSettings(40_000)
    assert tm.run(m.records, m.objects, str(m.root / "ns"), settings).to_s3 == 0
    assert alice.ns.stat("/d/f.bin").storage == "small"
    assert later(m, threshold=40_000).to_s3 == 1


def test_a_pass_is_bounded_and_the_next_resumes_at_its_cursor(cloud):
    m, alice = cloud
    for name in ("a/x", "a-c", "b", "c/d/e", "z"):
        alice.mkdir("/d/" + name.rsplit("/", 1)[0], parents=True) if "/" in name else None
        put(alice, f"/d/{name}", os.urandom(10_000))
    moved = []
    for expected in (2, 2, 1):
        done = later(m, threshold=5_000, max_files=2)
        moved.append(done.to_s3)
        assert done.unfinished == (1 if expected == 2 else 0)
    assert moved == [2, 2, 1]
    assert tm.Cursor(m.records.table, "alice").get() is None
    assert all(e.storage == "large" for e in alice.ns.walk_files("/"))


def test_files_after_walks_in_name_order_and_skips_what_the_cursor_passed(tmp_path):
    for rel in ("a/x", "a/y/z", "a-c", "b", "c/d"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"1")
    walk = [p for p, _ in tm.files_after(str(tmp_path), None)]
    assert walk == ["/a/x", "/a/y/z", "/a-c", "/b", "/c/d"]
    assert [p for p, _ in tm.files_after(str(tmp_path), "/a/y/z")] == ["/a-c", "/b", "/c/d"]
    assert [p for p, _ in tm.files_after(str(tmp_path), "/a/x")] == ["/a/y/z", "/a-c", "/b", "/c/d"]


def test_a_busy_file_is_skipped_and_left_as_it_is(cloud):
    m, alice = cloud
    put(alice, "/d/f.bin", os.urandom(50_000))
    with path_leases(m.records.table, "alice", ["/d/f.bin"]):
        done = later(m, threshold=40_000)
    assert (done.to_s3, done.skipped) == (0, 1)
    assert alice.ns.stat("/d/f.bin").storage == "small"
    assert later(m, threshold=40_000).to_s3 == 1


def test_an_object_that_does_not_hold_its_content_is_never_moved_into_efs(cloud):
    m, alice = cloud
    put(alice, "/d/f.bin", os.urandom(50_000))
    later(m, threshold=40_000)
    link = alice.ns.read_link("/d/f.bin")
    m.s3.put_object(Bucket=MOTO_BUCKET, Key=content.object_key(link.content_hash), Body=b"not it")
    done = later(m, threshold=2 << 20)
    assert (done.to_efs, done.skipped) == (0, 1)
    assert alice.ns.stat("/d/f.bin").storage == "large"


def test_a_packed_file_above_a_lowered_threshold_moves_to_s3_from_its_segment(cloud):
    m, alice = cloud
    data = os.urandom(20_000)
    put(alice, "/d/p.bin", data)
    settings = segments.Settings(pack_after_s=0)
    segments.run(m.records.table, m.s3, MOTO_BUCKET, str(m.root / "ns"), settings, clean=False)
    assert alice.ns.segment_stub("/d/p.bin") is not None
    before = seen(alice, "/d/p.bin")
    assert later(m, threshold=100_000).to_s3 == 0  # under the threshold: stays packed
    assert later(m, threshold=10_000).to_s3 == 1
    assert alice.ns.stat("/d/p.bin").storage == "large" and seen(alice, "/d/p.bin") == before


def test_moved_content_survives_the_collector_and_shared_content_is_stored_once(cloud):
    m, alice = cloud
    data = os.urandom(50_000)
    put(alice, "/d/one.bin", data)
    put(alice, "/d/two.bin", data)
    assert later(m, threshold=40_000).to_s3 == 2
    m.collect(grace_s=0)
    assert read(alice, "/d/one.bin") == data and read(alice, "/d/two.bin") == data
    listed = m.s3.list_objects_v2(Bucket=MOTO_BUCKET, Prefix="objects/")
    assert len(listed["Contents"]) == 1
