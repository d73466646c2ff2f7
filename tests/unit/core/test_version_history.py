"""Version history over EFS (a temp dir), S3 and DynamoDB (moto): what an overwrite or a delete
keeps, restores byte for byte, and what upkeep and the collector drop after the retention."""

from __future__ import annotations

import hashlib
import os
import time

import pytest

from hycloud_core import content
from hycloud_core.errors import ConflictError, NotFoundError
from hycloud_core.fs import FileSystem
from hycloud_core.fs.small_batch import SmallWrite, put_small_batch
from hycloud_core.fs.trash import purge_trash
from hycloud_core.fs.version_copies import VersionCopies
from hycloud_core.fs.version_upkeep import purge_expired_versions
from hycloud_core.store.version_records import VersionRecords
from tests.conftest import MOTO_BUCKET
from tests.unit.core.moto_content import put_large, stored

DAY = 86400


@pytest.fixture
def alice(moto_filesystems) -> FileSystem:
    fs = moto_filesystems.fs("alice")
    fs.retain_s = 30 * DAY
    return fs


def put(fs: FileSystem, path: str, data: bytes) -> None:
    fs.put_small(path, data, hashlib.sha256(data).hexdigest())


def s3_bytes(fs: FileSystem, h: str) -> bytes:
    return fs.s3.get_object(Bucket=MOTO_BUCKET, Key=content.object_key(h))["Body"].read()


def test_overwrite_keeps_the_old_small_version_and_restores_it(alice):
    put(alice, "/a.txt", b"first")
    put(alice, "/a.txt", b"second")
    put(alice, "/a.txt", b"third")
    kept = alice.history.listing("/a.txt")
    assert [(v.size, v.reason, v.kind, v.by) for v in kept] == [
        (6, "overwrite", "small", "alice"),
        (5, "overwrite", "small", "alice"),
    ]
    assert kept[0].content_hash == content.hash_bytes(b"second")
    assert kept[1].sha256 == hashlib.sha256(b"first").hexdigest()
    assert kept[0].expires == pytest.approx(kept[0].at + 30 * DAY)

    entry, record = alice.history.restore("/a.txt", kept[1].version)
    assert record == kept[1] and alice.ns.read("/a.txt") == b"first" and entry.size == 5
    newest = alice.history.listing("/a.txt")
    assert len(newest) == 3 and newest[0].content_hash == content.hash_bytes(b"third")  # nothing lost
    put(alice, "/a.txt", b"first")  # the same content again: no new version
    assert len(alice.history.listing("/a.txt")) == 3


def test_a_deleted_file_is_restored_by_default_to_its_newest_version(alice):
    alice.mkdir("/d")
    put(alice, "/d/gone.txt", b"keep me")
    alice.delete("/d/gone.txt")
    assert not alice.ns.exists("/d/gone.txt")
    (only,) = alice.history.listing("/d/gone.txt")
    assert only.reason == "delete"
    alice.rmdir("/d")
    alice.history.restore("/d/gone.txt")  # its folder is made again
    assert alice.ns.read("/d/gone.txt") == b"keep me"


def test_restore_to_another_path_leaves_the_path_as_it_is(alice):
    put(alice, "/r", b"old")
    put(alice, "/r", b"new")
    entry, _ = alice.history.restore("/r", to="/r.old")
    assert entry.path == "/r.old" and alice.ns.read("/r.old") == b"old" and alice.ns.read("/r") == b"new"


def test_unknown_versions_and_paths_are_404_and_a_folder_in_the_way_409(alice):
    put(alice, "/k", b"1")
    put(alice, "/k", b"2")
    with pytest.raises(NotFoundError) as err:
        alice.history.restore("/k", "0000000000000-00000000")
    assert err.value.code == "version-not-found"
    with pytest.raises(NotFoundError):
        alice.history.restore("/never")
    with pytest.raises(NotFoundError):
        alice.history.listing("/never")
    assert alice.history.listing("/") == []  # exists, nothing kept
    put(alice, "/f", b"1")
    alice.delete("/f")
    alice.mkdir("/f")
    with pytest.raises(ConflictError):
        alice.history.restore("/f")


def test_large_versions_keep_their_object_and_restore_it(alice):
    h1 = put_large(alice, "/big", b"A" * 3000)
    h2 = put_large(alice, "/big", b"B" * 3000)
    (v1,) = alice.history.listing("/big")
    assert (v1.kind, v1.content_hash, v1.size) == ("large", h1, 3000)
    assert v1.sha256 == hashlib.sha256(b"A" * 3000).hexdigest()
    alice.history.restore("/big", v1.version)
    assert alice.ns.stat("/big").content_hash == h1 and s3_bytes(alice, h1) == b"A" * 3000
    assert [v.content_hash for v in alice.history.listing("/big")] == [h2, h1]


def test_large_to_small_and_back_keeps_each_kind(alice):
    h = put_large(alice, "/mix", b"L" * 2000)
    put(alice, "/mix", b"small now")
    alice.history.restore("/mix")
    assert alice.ns.stat("/mix").content_hash == h
    assert [v.kind for v in alice.history.listing("/mix")] == ["small", "large"]


def test_move_and_copy_over_a_file_keep_what_they_replace(alice):
    put(alice, "/dst", b"replaced by move")
    put(alice, "/src", b"moved")
    alice.move("/src", "/dst")
    put(alice, "/src2", b"copied")
    alice.copy("/src2", "/dst")
    kept = alice.history.listing("/dst")
    assert [v.size for v in kept] == [5, 16]
    alice.history.restore("/dst", kept[1].version)
    assert alice.ns.read("/dst") == b"replaced by move"


def test_a_bundle_overwrite_keeps_versions(alice):
    put(alice, "/b1", b"one")
    writes = [SmallWrite("/b1", b"uno", hashlib.sha256(b"uno").hexdigest())]
    assert put_small_batch(alice, writes)[0].path == "/b1"
    (kept,) = alice.history.listing("/b1")
    assert kept.content_hash == content.hash_bytes(b"one")


def test_no_retention_keeps_nothing(moto_filesystems):
    fs = moto_filesystems.fs("bob")
    assert fs.retain_s == 0
    put(fs, "/x", b"1")
    put(fs, "/x", b"2")
    fs.delete("/x")
    assert VersionRecords(fs.records.table, "bob").all() == []


def test_small_copies_are_hard_links_kept_by_content_hash(alice):
    put(alice, "/h", b"linked")
    host = alice.ns.host("/h")
    inode = os.stat(host).st_ino
    put(alice, "/h", b"other")
    copy = VersionCopies(os.path.dirname(alice.ns.root), "alice").path(content.hash_bytes(b"linked"))
    assert os.stat(copy).st_ino == inode and open(copy, "rb").read() == b"linked"


def test_upkeep_drops_expired_versions_and_the_collector_then_their_content(moto_filesystems, alice):
    """Referenced content stays (past its grace, past the object's keep_until) while a kept version
    names it; after the retention upkeep drops the record and the copy, and the collector the object."""
    m = moto_filesystems
    h_large = put_large(alice, "/big", b"A" * 4000)
    put(alice, "/small", b"old small")
    alice.delete("/big")
    alice.delete("/small")
    copies = VersionCopies(os.path.dirname(alice.ns.root), "alice")
    small_copy = copies.path(content.hash_bytes(b"old small"))

    soon = time.time() + 2 * DAY  # past the grace period, within the retention
    assert purge_expired_versions(m.objects, str(m.root / "ns"), grace_s=3600, now=soon).records == 0
    m.objects.release(h_large, soon + 60)  # the object's own keep_until gone: the record alone keeps it
    collector = m.collect()
    assert h_large not in collector.reclaimed and stored(alice, h_large)
    from hycloud_core.store.collector import Collector

    later_round = Collector(m.records.table, m.objects, str(m.root / "ns"), 3600).run(now=soon)
    assert later_round.reclaimed == [] and stored(alice, h_large) and os.path.exists(small_copy)
    assert {v.kind for v in alice.history.records.all()} == {"small", "large"}

    after = time.time() + 31 * DAY
    assert len(purge_trash(m.records.table, str(m.root / "ns"), 30 * DAY, now=after).items) == 2
    purged = purge_expired_versions(m.objects, str(m.root / "ns"), grace_s=3600, now=after)
    assert purged.records == 2 and purged.copies == [content.hash_bytes(b"old small")]
    assert not os.path.exists(small_copy) and alice.history.records.all() == []
    final = Collector(m.records.table, m.objects, str(m.root / "ns"), 3600).run(now=after)
    assert final.reclaimed == [h_large] and not stored(alice, h_large)


def test_an_administrators_shorter_retention_releases_content_at_once(moto_filesystems, alice):
    m = moto_filesystems
    h = put_large(alice, "/big", b"Z" * 1000)
    alice.delete("/big")
    assert m.collect().reclaimed == []  # kept: the version and its keep_until
    purged = purge_expired_versions(m.objects, str(m.root / "ns"), grace_s=0, retention_s=0)
    assert purged.records == 1 and m.collect().reclaimed == []  # its link is in the trash
    alice.trash.empty()
    assert m.collect().reclaimed == [h]


def test_a_copy_still_linked_elsewhere_or_fresh_is_not_purged(alice, moto_filesystems):
    put(alice, "/p", b"bytes")
    put(alice, "/p", b"other")
    copies = VersionCopies(os.path.dirname(alice.ns.root), "alice")
    h = content.hash_bytes(b"bytes")
    assert copies.purge(set(), cutoff=time.time() - 3600) == []  # younger than the grace
    extra = os.path.join(os.path.dirname(copies.path(h)), "second-name")
    os.link(copies.path(h), extra)  # as a keep in flight holds it
    assert copies.purge({"second-name"}, cutoff=time.time() + 1) == []
    os.unlink(extra)
    assert copies.purge(set(), cutoff=time.time() + 1) == [h] and not os.path.exists(copies.path(h))
    with pytest.raises(NotFoundError) as err:
        alice.history.restore("/p")
    assert err.value.code == "content-gone"


def test_a_coded_version_restores_as_a_coded_link_with_its_layout(alice):
    """Its record holds the layout (numbers and all, read back from DynamoDB): the restore links
    it with that layout, touching no object (a coded file has none)."""
    from hycloud_core.store.version_records import VersionRecord

    layout = {
        "n": 3,
        "k": 2,
        "chunk_size": 4,
        "chunks": [{"length": 7, "blocks": [{"hash": "b1", "size": 4}]}],
    }
    now = time.time()
    kept = VersionRecord(
        "/c.bin", "v1", "large", "c" * 64, 7, now, "alice", now, "delete", now + 99, erasure=layout
    )
    VersionRecords(alice.records.table, alice.user).put(kept)
    entry, record = alice.history.restore("/c.bin", "v1", to="/back.bin")
    assert entry.path == "/back.bin" and record.version == "v1"
    assert alice.ns.read_link("/back.bin").erasure == layout
