"""The metadata cache the mount and WebDAV serve from, over an in-memory cloud and a clock the
tests move: expired listings answer at once while one refresh per folder runs in the background,
no listing older than its bound answers, the mount's own changes keep cached listings exact (no
listing again, even when they land during a fetch), and a create waits on no listing."""

from __future__ import annotations

import errno
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import mfusepy as fuse
import pytest

from hycloud.caches.meta import UNKNOWN, MetaCache
from tests.unit.client.test_mount_writeback import (
    FakeCloud,
    _flushers_end_with_their_test,  # noqa: F401 (autouse here too)
    _fs,
    _write,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class GatedCloud(FakeCloud):
    """Listings wait for `opened` while it is clear (a slow, loaded cloud)."""

    def __init__(self) -> None:
        super().__init__()
        self.opened = threading.Event()
        self.opened.set()
        self.listing_started = threading.Event()

    def iter_dir(self, path: str, page_size: int = 1000):
        entries = list(super().iter_dir(path, page_size))  # the cloud's state when asked
        self.listing_started.set()
        assert self.opened.wait(10)
        yield from entries


@pytest.fixture
def cloud() -> GatedCloud:
    cloud = GatedCloud()
    cloud.dirs.add("/d")
    cloud.files |= {"/d/a": b"a", "/d/b": b"bb"}
    return cloud


def _meta(cloud: GatedCloud, clock: Clock) -> MetaCache:
    return MetaCache(cloud, ttl=2.0, max_age=30.0, clock=clock)  # type: ignore[arg-type]


def test_an_expired_listing_answers_at_once_and_one_refresh_brings_the_change(cloud):
    clock = Clock()
    meta = _meta(cloud, clock)
    assert meta.entry("/d/new") is None
    cloud.files["/d/new"] = b"theirs"  # another client
    clock.now += 5  # past the 2 s timeout, within the 30 s bound
    cloud.opened.clear()
    started = time.monotonic()
    for _ in range(20):  # many lookups while the cloud is slow: one refresh, no waiting
        assert meta.entry("/d/new") is None
        assert meta.entry("/d/a")["size"] == 1
    assert time.monotonic() - started < 0.5
    assert cloud.listing_started.wait(5)
    cloud.opened.set()
    assert meta.settle()
    assert cloud.calls.count("ls") == 2
    assert meta.entry("/d/new")["size"] == 6  # the refresh landed
    assert cloud.calls.count("ls") == 2


def test_a_listing_past_its_bound_is_not_served(cloud):
    clock = Clock()
    meta = _meta(cloud, clock)
    assert meta.entry("/d/new") is None
    cloud.files["/d/new"] = b"theirs"
    clock.now += 31  # older than max_age: the lookup waits for a new listing
    assert meta.entry("/d/new")["size"] == 6
    assert cloud.calls.count("ls") == 2
    assert meta.known("/d/new")["size"] == 6


def test_the_bound_defaults_to_fifteen_timeouts_and_a_zero_timeout_serves_nothing_stale(cloud):
    assert MetaCache(cloud, ttl=2.0).max_age == 30.0  # type: ignore[arg-type]
    clock = Clock()
    meta = MetaCache(cloud, ttl=0.0, clock=clock)  # type: ignore[arg-type]
    meta.entry("/d/a")
    cloud.files["/d/a"] = b"longer"
    assert meta.entry("/d/a")["size"] == 6 and cloud.calls.count("ls") == 2


def test_own_changes_keep_the_listing_exact_with_no_listing_again(cloud):
    clock = Clock()
    meta = _meta(cloud, clock)
    assert sorted(e["name"] for e in meta.listing("/d")) == ["a", "b"]
    cloud.dirs.add("/d/sub")
    meta.learn("/d/c", {"name": "c", "type": "file", "size": 3, "mtime": 1.0})
    meta.removed("/d/a")
    meta.moved("/d/b", "/d/sub2")
    meta.learn("/d/sub", {"name": "sub", "type": "dir", "size": 0, "mtime": 1.0})
    meta.empty("/d/sub")
    meta.moved("/d/sub", "/d/sub3")  # a folder moved: its own listing answers under the new name
    assert meta.listing("/d/sub3") == [] and meta.known("/d/sub/x") is UNKNOWN
    clock.now += 10  # past the timeout, but written into just now... within half the bound
    meta.wrote("/d")
    assert sorted(e["name"] for e in meta.listing("/d")) == ["c", "sub2", "sub3"]
    assert meta.entry("/d/a") is None and meta.entry("/d/sub2")["size"] == 2
    assert meta.settle()
    assert cloud.calls.count("ls") == 1
    clock.now += 10  # past half the bound: refreshed in the background even while written into
    meta.wrote("/d")
    meta.entry("/d/c")
    assert meta.settle() and cloud.calls.count("ls") == 2


@contextmanager
def listing_in_flight(meta: MetaCache, cloud: FakeCloud, folder: str) -> Iterator[None]:
    """A listing of `folder` asked for, its answer held by the cloud until the block ends."""
    cloud.opened.clear()
    lister = threading.Thread(target=meta.listing, args=(folder,))
    lister.start()
    assert cloud.listing_started.wait(5)
    yield
    cloud.opened.set()
    lister.join(5)


def test_changes_made_while_a_listing_is_fetched_are_applied_to_it(cloud):
    """A listing asked for before a file was removed and another sent must not bring the removed
    one back nor lack the sent one."""
    clock = Clock()
    meta = _meta(cloud, clock)
    with listing_in_flight(meta, cloud, "/d"):
        del cloud.files["/d/a"]  # the cloud answers the listing with its state from before these
        cloud.files["/d/sent"] = b"sent"
        meta.removed("/d/a")
        meta.learn("/d/sent", {"name": "sent", "type": "file", "size": 4, "mtime": 1.0})
    clock.now += 3
    assert sorted(e["name"] for e in meta.listing("/d")) == ["b", "sent"]
    assert meta.entry("/d/a") is None


def test_a_listing_fetched_while_its_folder_is_removed_is_not_kept(cloud):
    clock = Clock()
    meta = _meta(cloud, clock)
    with listing_in_flight(meta, cloud, "/d"):
        meta.removed("/d")
    assert meta.listing_kept("/d") is None


def test_a_create_waits_on_no_listing_and_absent_names_answer_from_the_cached_listing(cloud, tmp_path):
    fs = _fs(cloud, tmp_path, delay=30)
    clock = Clock()
    fs.meta = _meta(cloud, clock)
    with pytest.raises(fuse.FuseOSError) as err:
        fs.getattr("/d/new0")  # lists /d once
    assert err.value.errno == errno.ENOENT
    clock.now += 20  # expired: answered from the listing while a refresh waits on the cloud
    cloud.opened.clear()
    started = time.monotonic()
    for i in range(50):  # tar x: a lookup of each absent name, then its create
        with pytest.raises(fuse.FuseOSError):
            fs.getattr(f"/d/new{i}")
        _write(fs, f"/d/new{i}", b"x" * i)
    fh = fs.create("/elsewhere/unlisted", 0o644)  # its folder never listed: still no waiting
    fs.release("/elsewhere/unlisted", fh)
    assert time.monotonic() - started < 1.0
    assert cloud.calls.count("ls") <= 2
    cloud.opened.set()
    fs.cache.sync_all()
    assert cloud.files["/d/new49"] == b"x" * 49 and len([p for p in cloud.files if "/new" in p]) == 50
    fs.meta.settle()


def test_a_file_created_in_an_unlisted_folder_and_removed_asks_the_cloud_once(cloud, tmp_path):
    """Whether the cloud holds a path is asked only when a removal needs it."""
    fs = _fs(cloud, tmp_path, delay=30)
    cloud.calls.clear()
    _write(fs, "/d/a", b"mine")  # /d/a exists in the cloud; /d was never listed
    assert cloud.calls == []
    fs.unlink("/d/a")
    assert cloud.calls == ["ls", "rm"] and "/d/a" not in cloud.files
    _write(fs, "/d/tmp", b"t")
    fs.unlink("/d/tmp")  # known absent from the listing: no request
    assert cloud.calls == ["ls", "rm"]


def test_a_folder_made_here_stays_known_after_a_listing_fetched_before_it_reached_the_cloud(cloud, tmp_path):
    """`git clone`: .git/objects/bc is made locally, /d is listed again (the cloud has no bc yet),
    then bc's first object is sent: bc must not turn into "no such folder"."""
    fs = _fs(cloud, tmp_path, delay=30)
    clock = Clock()
    fs.meta = _meta(cloud, clock)
    assert sorted(fs.readdir("/d", 0)) == [".", "..", "a", "b"]
    fs.mkdir("/d/bc", 0o755)
    fs.mkdir("/d/bc/inner", 0o755)
    _write(fs, "/d/bc/inner/obj", b"blob")
    clock.now += 40  # past the bound: the next lookup lists /d again, without bc
    assert fs.getattr("/d/a")["st_size"] == 1
    assert "bc" not in {e["name"] for e in fs.meta.listing_kept("/d") or []}
    fs.cache.sync_all()  # the upload makes bc and bc/inner in the cloud
    assert fs.getattr("/d/bc")["st_mode"] & 0o040000 and fs.getattr("/d/bc/inner")["st_mode"] & 0o040000
    assert fs.getattr("/d/bc/inner/obj")["st_size"] == 4
    assert "bc" in fs.readdir("/d", 0)
