"""Chunk collection in encrypted folders (client/hycloud/encrypted/collect.py, leases.py), over an
in-memory store with a clock of the test's own: unreferenced chunks go after the grace period,
and a chunk an upload in flight reuses, or a manifest committed during the collection names,
is never removed."""

from __future__ import annotations

import os

import pytest

from hycloud.encrypted import EncryptedFolder, MemoryStore, collect, download, leases, upload
from hycloud.encrypted.counters import Counters
from hycloud_core.crypto import chunks
from hycloud_core.crypto.keys import KdfParams
from hycloud_core.errors import BadRequestError, ConflictError

DAY = collect.DAY


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def folder(clock, monkeypatch) -> EncryptedFolder:
    monkeypatch.setattr(leases.time, "time", clock)  # leases an upload writes carry the same time
    return EncryptedFolder.create(MemoryStore(clock), "alice", b"secret", KdfParams(2**10), Counters())


def _file(path, size: int, seed: bytes = b""):
    path.write_bytes(seed + os.urandom(size))
    return path


def _chunks(folder: EncryptedFolder) -> set[str]:
    return set(folder.store.listing(chunks.DIR))


def _aged_garbage(folder: EncryptedFolder, clock, data) -> set[str]:
    """`data` put then removed with every other file, two days ago: its chunks, now garbage."""
    upload.put_file(folder, data, "a.bin")
    upload.put_tree(folder, _empty(data.parent), delete=True)
    clock.now += 2 * DAY
    return _chunks(folder)


def test_a_removed_files_chunks_go_after_the_grace_period_and_the_rest_still_reads(folder, clock, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    _file(src / "keep.bin", 300_000)
    _file(src / "gone.bin", 300_000)
    upload.put_tree(folder, src)
    kept = collect.referenced(folder)
    (src / "gone.bin").unlink()
    upload.put_tree(folder, src, delete=True)
    garbage = _chunks(folder) - collect.referenced(folder)
    assert garbage and collect.referenced(folder) <= kept

    clock.now += DAY / 2  # within the grace period: kept
    first = collect.collect(folder, clock=clock)
    assert first.removed == [] and first.young == len(garbage)
    clock.now += DAY
    dry = collect.collect(folder, dry_run=True, clock=clock)
    assert set(dry.removed) == garbage and _chunks(folder) >= garbage
    done = collect.collect(folder, clock=clock)
    assert set(done.removed) == garbage and _chunks(folder) == collect.referenced(folder)
    assert leases.MARKER not in folder.store.objects  # type: ignore[attr-defined]
    download.get(folder, "", tmp_path / "back")
    assert (tmp_path / "back" / "keep.bin").read_bytes() == (src / "keep.bin").read_bytes()


def test_a_chunk_an_upload_in_flight_reuses_is_spared(folder, clock, tmp_path):
    data = _file(tmp_path / "a.bin", 200_000)
    upload.put_file(folder, data, "a.bin")
    reused = collect.referenced(folder)
    upload.put_tree(folder, _empty(tmp_path), delete=True)
    assert collect.referenced(folder) == set()

    clock.now += 2 * DAY
    lease = leases.Lease.start(folder.store, clock)  # another device, half way through a put
    for name in reused:
        lease.touch(name)  # of the same bytes: it sends none of these chunks
    lease.write()
    result = collect.collect(folder, clock=clock)
    assert result.removed == [] and result.touched == len(reused)
    assert _chunks(folder) == reused


def test_an_upload_that_starts_as_the_collection_begins_stops_it_removing(folder, clock, tmp_path):
    """The collection writes its marker, then finds a lease: an upload whose chunk listing may be
    older than the marker, so nothing is removed this time."""
    garbage = _aged_garbage(folder, clock, _file(tmp_path / "a.bin", 100_000))
    store = folder.store
    original = store.write_many

    def write_many(blobs, expect=None):
        refused = original(blobs, expect)
        if leases.MARKER in blobs:  # just after the marker: a lease written before it was read
            original({f"{leases.LEASES}/other": b'{"at": %f, "touched": []}' % clock()})
        return refused

    store.write_many = write_many  # type: ignore[method-assign]
    result = collect.collect(folder, clock=clock)
    assert result.deferred and result.removed == [] and _chunks(folder) == garbage
    assert leases.MARKER not in store.objects  # type: ignore[attr-defined]


def test_a_put_committed_while_the_collection_read_keeps_its_chunks(folder, clock, tmp_path):
    """An upload that reused garbage chunks and finished between the first read of the manifests
    and the marker: the second read finds its manifest, so those chunks stay."""
    data = _file(tmp_path / "a.bin", 150_000)
    garbage = _aged_garbage(folder, clock, data)
    store = folder.store
    original = store.write_many

    def write_many(blobs, expect=None):
        if leases.MARKER in blobs:
            store.write_many = original  # type: ignore[method-assign]
            upload.put_file(folder, data, "again.bin")  # all of its chunks are stored already
        return original(blobs, expect)

    store.write_many = write_many  # type: ignore[method-assign]
    result = collect.collect(folder, clock=clock)
    assert result.removed == [] and not result.deferred
    assert _chunks(folder) == garbage == collect.referenced(folder)
    download.get(folder, "again.bin", tmp_path / "again.bin")
    assert (tmp_path / "again.bin").read_bytes() == data.read_bytes()


def test_an_upload_waits_for_a_running_collection_then_gives_up_busy(folder, clock, tmp_path):
    folder.store.write_many({leases.MARKER: b'{"at": %f}' % clock()})
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.now += seconds

    with pytest.raises(ConflictError) as refused:
        leases.Lease.start(folder.store, clock, sleep)
    assert refused.value.code == "busy" and sum(slept) >= leases.WAIT_S
    assert folder.store.listing(leases.LEASES) == {}  # its lease is gone with it

    clock.now += leases.MARKER_TTL  # a collection that stopped half way holds nobody back for long
    leases.Lease.start(folder.store, clock, sleep).end()


def test_a_lease_not_refreshed_for_its_life_is_ignored(folder, clock, tmp_path):
    upload.put_file(folder, _file(tmp_path / "a.bin", 100_000), "a.bin")
    upload.put_tree(folder, _empty(tmp_path), delete=True)
    stale = leases.Lease.start(folder.store, clock)  # a put that stopped and never ended
    for name in _chunks(folder):
        stale.touch(name)
    stale.write()
    clock.now += 2 * DAY
    assert len(collect.collect(folder, clock=clock).removed) > 0
    assert _chunks(folder) == set()


def test_a_grace_period_shorter_than_a_lease_is_refused(folder):
    with pytest.raises(BadRequestError):
        collect.collect(folder, grace_s=60)


def _empty(tmp_path):
    path = tmp_path / "empty"
    path.mkdir(exist_ok=True)
    return path


def test_a_put_reusing_garbage_chunks_touches_them_for_a_collection_mid_way(folder, clock, tmp_path):
    """A put of bytes whose chunks are garbage (their file was removed): a collection that runs
    while the put commits finds them touched by its lease, not candidates."""
    data = _file(tmp_path / "a.bin", 150_000)
    garbage = _aged_garbage(folder, clock, data)
    store, seen = folder.store, []
    original = store.write_many

    def write_many(blobs, expect=None):
        if expect and not seen:  # the put's commit of its manifest and name map
            seen.append(collect.collect(folder, clock=clock))
        return original(blobs, expect)

    store.write_many = write_many  # type: ignore[method-assign]
    upload.put_file(folder, data, "back.bin")
    assert seen[0].touched == len(garbage) and seen[0].removed == [] and not seen[0].deferred
    assert _chunks(folder) == garbage == collect.referenced(folder)
