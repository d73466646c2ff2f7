"""The mount's write-back cache and its FUSE operations over an in-memory cloud (no FUSE, no network):
close is local, the flusher sends closed files in batches, fsync waits for durability, a file only
in the cache is renamed or removed without a request, the cache stays within its bound, and
unmount sends everything."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import mfusepy as fuse
import pytest

from hycloud.caches.writeback import WriteBack
from hycloud.mount.fuse_ops import HyCloudFuse
from hycloud_core import bundle
from hycloud_core.errors import ConflictError, NotFoundError


class HeaderHttp:
    """`POST /v1/bundles/download` of `.hcenc` headers, by which the mount and WebDAV learn which
    folders are encrypted; counted in `asked`, not in the cloud's `calls`."""

    def __init__(self, cloud: FakeCloud) -> None:
        self.cloud, self.asked = cloud, 0

    def request(self, method: str, route: str, json: dict | None = None, **_) -> object:
        assert (method, route) == ("POST", "/v1/bundles/download") and json is not None
        self.asked += 1
        found = [(p, self.cloud.files[p]) for p in json["paths"] if p in self.cloud.files]
        members = [(bundle.Member(p, len(d), hashlib.sha256(d).hexdigest()), d) for p, d in found]
        return type("Answer", (), {"content": bundle.pack(members)})()


class FakeCloud:
    """The SDK calls the mount makes, over dicts; `calls` counts them by name."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.mtimes: dict[str, float] = {}
        self.dirs: set[str] = {"/"}
        self.calls: list[str] = []
        self.batches: list[list[str]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.fail: str | None = None
        self.http = HeaderHttp(self)  # the bundle request that tells encrypted folders

    def _entry(self, path: str) -> dict:
        name = path.rsplit("/", 1)[1]
        if path in self.files:
            size, mtime = len(self.files[path]), self.mtimes.get(path, 1.0)
            return {"name": name, "type": "file", "size": size, "mtime": mtime}
        return {"name": name, "type": "dir", "size": 0, "mtime": 1.0}

    def stat(self, path: str) -> dict:
        self.calls.append("stat")
        if path not in self.files and path not in self.dirs:
            raise NotFoundError(path)
        return self._entry(path)

    def iter_dir(self, path: str, page_size: int = 1000) -> Iterator[dict]:
        self.calls.append("ls")
        if path not in self.dirs:
            raise NotFoundError(path)
        for child in sorted(self.files.keys() | self.dirs):
            if child != "/" and os.path.dirname(child) == path:
                yield self._entry(child)

    def get(self, path: str, local: Path) -> Path:
        self.calls.append("get")
        Path(local).write_bytes(self.files[path])
        return Path(local)

    def mkdir(self, path: str, parents: bool = False) -> dict:
        self.calls.append("mkdir")
        self.dirs.update([path, *(_ancestors(path) if parents else [])])
        return {}

    def rmdir(self, path: str) -> dict:
        self.calls.append("rmdir")
        if any(os.path.dirname(p) == path for p in self.files.keys() | self.dirs):
            raise ConflictError("not empty", code="not-empty")
        self.dirs.discard(path)
        return {}

    def rm(self, path: str) -> dict:
        self.calls.append("rm")
        if self.files.pop(path, None) is None:
            raise NotFoundError(path)
        return {}

    def mv(self, src: str, dst: str) -> dict:
        self.calls.append("mv")
        if src in self.files:
            self.files[dst] = self.files.pop(src)
        else:
            for path in [p for p in self.files if p.startswith(src + "/")]:
                self.files[dst + path[len(src) :]] = self.files.pop(path)
            self.dirs = {dst + d[len(src) :] if d == src or d.startswith(src + "/") else d for d in self.dirs}
        return {}

    def upload(self, pairs: Sequence[tuple[Path, str]]) -> list[dict]:
        """As sdk.bundles.put_files: one result per pair."""
        self.gate.wait(10)
        self.batches.append([remote for _, remote in pairs])
        if self.fail:
            return [{"path": r, "status": "error", "error": "full", "code": self.fail} for _, r in pairs]
        for local, remote in pairs:
            self.dirs.update(_ancestors(remote))  # parents=True
            self.files[remote] = Path(local).read_bytes()
            self.mtimes[remote] = Path(local).stat().st_mtime  # kept, as bundles keep it
        return [{"path": remote, "status": "ok"} for _, remote in pairs]


def _ancestors(path: str) -> list[str]:
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


@pytest.fixture
def cloud() -> FakeCloud:
    return FakeCloud()


_MADE: list[WriteBack] = []  # the caches made by this test, whose flushers end with it


@pytest.fixture(autouse=True)
def _flushers_end_with_their_test() -> Iterator[None]:
    """A flusher left running retries its uploads against a fake cloud whose files are gone, after
    its test and into others: each one ends with its test, sending nothing more."""
    yield
    while _MADE:
        _MADE.pop().halt(timeout=5)  # one still in an upload a test held is left to finish it


def _fs(cloud: FakeCloud, tmp_path: Path, limit: int = 1 << 30, delay: float = 0.05) -> HyCloudFuse:
    fs = HyCloudFuse(cloud, cache=None, cache_dir=str(tmp_path))  # type: ignore[arg-type]
    fs.cache.stop()
    fs.cache = WriteBack(cloud.upload, tmp_path / "cache", limit=limit, delay=delay)
    _MADE.append(fs.cache)
    fs.cache.on_flushed, fs.cache.still_valid = fs._flushed, fs._still_valid
    fs.cache.make_dir = lambda path: cloud.mkdir(path, parents=True)
    fs.cache.dirs_made = lambda paths: fs.meta.learn_dirs(paths)
    return fs


def _write(fs: HyCloudFuse, path: str, data: bytes) -> None:
    fh = fs.create(path, 0o644)
    fs.write(path, data, 0, fh)
    fs.flush(path, fh)
    fs.release(path, fh)


def _eventually(check, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_close_is_local_and_the_flusher_sends_files_closed_together_in_one_batch(cloud, tmp_path):
    fs = _fs(cloud, tmp_path, delay=0.3)
    cloud.gate.clear()  # the cloud is slow: close must not wait for it
    t0 = time.monotonic()
    for i in range(20):
        _write(fs, f"/f{i}", b"x" * i)
    assert time.monotonic() - t0 < 1.0
    assert fs.getattr("/f7")["st_size"] == 7 and fs.getattr("/f7")["st_blocks"] == 1
    assert sorted(fs.readdir("/", 0)) == sorted([".", "..", *(f"f{i}" for i in range(20))])
    fh = fs.open("/f5", os.O_RDONLY)
    assert fs.read("/f5", 100, 0, fh) == b"x" * 5  # reads see the mount's own writes
    fs.release("/f5", fh)
    assert cloud.files == {}
    cloud.gate.set()
    _eventually(lambda: len(cloud.files) == 20)
    assert cloud.batches[0] == [f"/f{i}" for i in range(20)]
    assert cloud.files["/f19"] == b"x" * 19


def test_fsync_returns_once_the_file_is_in_the_cloud(cloud, tmp_path):
    fs = _fs(cloud, tmp_path, delay=30)  # the flusher would wait long: fsync asks at once
    fh = fs.create("/a", 0o644)
    fs.write("/a", b"durable", 0, fh)
    fs.fsync("/a", 0, fh)  # still open for writing: sent anyway
    assert cloud.files["/a"] == b"durable"
    fs.release("/a", fh)


def test_fsync_reports_the_upload_error_and_the_file_stays_cached(cloud, tmp_path):
    fs = _fs(cloud, tmp_path)
    cloud.fail = "quota-exceeded"
    fh = fs.create("/q", 0o644)
    fs.write("/q", b"too much", 0, fh)
    with pytest.raises(fuse.FuseOSError) as err:
        fs.fsync("/q", 0, fh)
    assert err.value.errno == 122  # EDQUOT
    fs.release("/q", fh)
    assert fs.getattr("/q")["st_size"] == 8
    cloud.fail = None
    fs.cache.sync(["/q"])
    assert cloud.files["/q"] == b"too much"


def test_a_file_changed_during_its_upload_is_sent_again(cloud, tmp_path):
    fs = _fs(cloud, tmp_path)
    cloud.gate.clear()
    _write(fs, "/c", b"first")
    _eventually(lambda: fs.cache.files["/c"].inflight)
    fh = fs.open("/c", os.O_WRONLY | os.O_TRUNC)
    fs.write("/c", b"second", 0, fh)
    fs.release("/c", fh)
    cloud.gate.set()
    fs.cache.sync(["/c"])
    assert cloud.files["/c"] == b"second"


def test_a_file_only_in_the_cache_is_renamed_and_removed_without_requests(cloud, tmp_path):
    fs = _fs(cloud, tmp_path, delay=30)
    _write(fs, "/tmp_obj", b"object")
    with pytest.raises(fuse.FuseOSError):
        fs.getattr("/obj")  # the kernel looks the target up first
    cloud.calls.clear()
    fs.rename("/tmp_obj", "/obj")
    _write(fs, "/lock", b"l")
    fs.unlink("/lock")
    assert "mv" not in cloud.calls and "rm" not in cloud.calls
    fs.cache.sync_all()
    assert cloud.files == {"/obj": b"object"}


def test_a_rename_during_the_files_upload_leaves_no_copy_at_the_old_path(cloud, tmp_path):
    """git writes config.lock, closes it and renames it to config: if the upload of config.lock
    was under way, the cloud must not keep a config.lock (the next `git config` would fail)."""
    fs = _fs(cloud, tmp_path)
    cloud.gate.clear()
    _write(fs, "/config.lock", b"[core]")
    _eventually(lambda: fs.cache.files["/config.lock"].inflight)
    renaming = threading.Thread(target=fs.rename, args=("/config.lock", "/config"))
    renaming.start()
    time.sleep(0.1)
    cloud.gate.set()
    renaming.join(5)
    fs.cache.sync_all()
    assert cloud.files == {"/config": b"[core]"}
    with pytest.raises(fuse.FuseOSError):
        fs.getattr("/config.lock")


def test_a_rename_onto_a_file_being_sent_does_not_wait_for_its_upload(cloud, tmp_path):
    """git status and git commit rename index.lock onto index: the rename waited for an upload of
    index under way (seconds on a loaded cloud). Now it returns at once, and the new index is
    sent only once the old one's upload has landed, so the cloud ends with the new bytes."""
    fs = _fs(cloud, tmp_path)
    started: list[list[str]] = []
    real = cloud.upload
    fs.cache.upload = lambda pairs: (started.append([r for _, r in pairs]), real(pairs))[1]
    cloud.gate.clear()
    _write(fs, "/index", b"old index")
    _eventually(lambda: fs.cache.files["/index"].inflight)
    _write(fs, "/index.lock", b"new index!")
    began = time.monotonic()
    fs.rename("/index.lock", "/index")
    assert time.monotonic() - began < 1.0
    assert fs.getattr("/index")["st_size"] == len(b"new index!")
    syncing = threading.Thread(target=fs.cache.sync, args=(["/index"],))
    syncing.start()
    time.sleep(0.3)
    assert started == [["/index"]]  # the new bytes wait for the old upload to land
    cloud.gate.set()
    syncing.join(5)
    assert started == [["/index"], ["/index"]] and cloud.files == {"/index": b"new index!"}
    assert len(list((tmp_path / "cache").iterdir())) == len(fs.cache.files) == 1
    fs.cache.stop()


def test_a_file_renamed_onto_one_being_sent_and_then_removed_stays_removed(cloud, tmp_path):
    """The removal in the cloud must follow the replaced file's upload under way: sent before
    it, the upload would bring the file back."""
    fs = _fs(cloud, tmp_path)
    cloud.gate.clear()
    _write(fs, "/index", b"old index")
    _eventually(lambda: fs.cache.files["/index"].inflight)
    _write(fs, "/index.lock", b"new index!")
    fs.rename("/index.lock", "/index")
    removing = threading.Thread(target=fs.unlink, args=("/index",))
    removing.start()
    time.sleep(0.3)
    assert removing.is_alive()  # waits for the upload under way
    cloud.gate.set()
    removing.join(5)
    fs.cache.sync_all()
    assert cloud.files == {}
    with pytest.raises(fuse.FuseOSError):
        fs.getattr("/index")
    fs.cache.stop()


def test_a_sent_file_and_a_made_folder_are_known_without_listing_again(cloud, tmp_path):
    fs = _fs(cloud, tmp_path)
    fs.mkdir("/d", 0o755)
    with pytest.raises(fuse.FuseOSError):
        fs.getattr("/d/new")  # known empty: no request
    _write(fs, "/d/new", b"abc")
    fs.cache.sync(["/d/new"])
    cloud.calls.clear()
    fs.cache.files.clear()  # as if evicted: the answer comes from the metadata cache
    assert fs.getattr("/d/new")["st_size"] == 3
    assert sorted(fs.readdir("/d", 0)) == [".", "..", "new"]
    assert cloud.calls == []


def test_rename_of_a_sent_file_moves_it_in_the_cloud_and_replaces_the_target(cloud, tmp_path):
    cloud.files["/target"] = b"old"
    fs = _fs(cloud, tmp_path)
    _write(fs, "/src", b"new")
    fs.cache.sync(["/src"])
    fs.rename("/src", "/target")
    fs.cache.sync_all()
    assert cloud.files == {"/target": b"new"}
    assert fs.getattr("/target")["st_size"] == 3
    with pytest.raises(fuse.FuseOSError):
        fs.getattr("/src")


def test_rename_of_a_folder_sends_its_files_first(cloud, tmp_path):
    fs = _fs(cloud, tmp_path, delay=30)
    fs.mkdir("/d", 0o755)
    _write(fs, "/d/x", b"x")
    fs.rename("/d", "/e")
    assert cloud.files == {"/e/x": b"x"}
    fh = fs.open("/e/x", os.O_RDONLY)
    assert fs.read("/e/x", 10, 0, fh) == b"x"
    fs.release("/e/x", fh)


def test_rmdir_of_a_folder_with_unsent_files_is_not_empty(cloud, tmp_path):
    fs = _fs(cloud, tmp_path, delay=30)
    fs.mkdir("/d", 0o755)
    _write(fs, "/d/x", b"x")
    with pytest.raises(fuse.FuseOSError) as err:
        fs.rmdir("/d")
    assert err.value.errno == 39  # ENOTEMPTY


def test_an_update_starts_from_the_clouds_bytes(cloud, tmp_path):
    cloud.files["/log"] = b"line1\n"
    fs = _fs(cloud, tmp_path)
    fh = fs.open("/log", os.O_WRONLY)
    fs.write("/log", b"line2\n", 6, fh)
    fs.release("/log", fh)
    fs.truncate("/log", 3)
    fs.cache.sync_all()
    assert cloud.files["/log"] == b"lin"


def test_the_cache_stays_within_its_bound(cloud, tmp_path):
    fs = _fs(cloud, tmp_path, limit=10_000, delay=30)
    for i in range(10):
        _write(fs, f"/big{i}", os.urandom(4000))
        assert fs.cache.cached_bytes() <= 10_000
    fs.cache.sync_all()
    assert len(cloud.files) == 10
    assert sum(p.stat().st_size for p in (tmp_path / "cache").iterdir()) <= 10_000


def test_another_clients_change_is_seen_once_the_cached_copy_is_stale(cloud, tmp_path):
    fs = _fs(cloud, tmp_path)
    fs.cache.ttl = fs.meta.ttl = 0.2
    _write(fs, "/shared", b"mine")
    fs.cache.sync(["/shared"])
    cloud.files["/shared"] = b"theirs, longer"
    time.sleep(0.3)
    assert fs.getattr("/shared")["st_size"] == len(b"theirs, longer")


def test_a_durable_copy_still_matching_the_cloud_serves_reads_without_a_download(cloud, tmp_path):
    fs = _fs(cloud, tmp_path)
    fs.cache.ttl = fs.meta.ttl = 0.1
    _write(fs, "/mine", b"read me back")
    fs.cache.sync(["/mine"])
    time.sleep(0.2)
    cloud.calls.clear()
    fh = fs.open("/mine", os.O_RDONLY)
    assert fs.read("/mine", 100, 0, fh) == b"read me back"
    fs.release("/mine", fh)
    assert "get" not in cloud.calls and cloud.calls.count("ls") <= 1


def test_folders_made_through_the_mount_cost_no_request_until_needed(cloud, tmp_path):
    fs = _fs(cloud, tmp_path, delay=30)
    cloud.calls.clear()
    fs.mkdir("/objects", 0o755)
    fs.mkdir("/objects/ab", 0o755)
    fs.mkdir("/empty", 0o755)
    fs.mkdir("/gone", 0o755)
    _write(fs, "/objects/ab/cdef", b"blob")
    assert fs.getattr("/objects/ab")["st_mode"] & 0o040000
    assert sorted(fs.readdir("/objects", 0)) == [".", "..", "ab"]
    fs.rmdir("/gone")
    with pytest.raises(fuse.FuseOSError) as err:
        fs.rmdir("/objects")
    assert err.value.errno == 39  # ENOTEMPTY
    assert cloud.calls == []
    fs.cache.sync_all()  # the file's upload makes its folders
    assert cloud.files == {"/objects/ab/cdef": b"blob"} and "/objects/ab" in cloud.dirs
    assert "/empty" not in cloud.dirs and "/gone" not in cloud.dirs
    fs.destroy("/")  # unmount makes the empty one
    assert "/empty" in cloud.dirs and "/gone" not in cloud.dirs


def test_a_folder_not_sent_yet_is_made_before_it_moves(cloud, tmp_path):
    fs = _fs(cloud, tmp_path, delay=30)
    fs.mkdir("/new", 0o755)
    fs.rename("/new", "/renamed")
    assert "/renamed" in cloud.dirs and "/new" not in cloud.dirs


def test_unmount_sends_everything_and_removes_the_cache(cloud, tmp_path):
    fs = _fs(cloud, tmp_path, delay=30)
    for i in range(5):
        _write(fs, f"/u{i}", b"u" * i)
    fs.destroy("/")
    assert cloud.files == {f"/u{i}": b"u" * i for i in range(5)}
    assert not (tmp_path / "cache").exists()


def test_unlink_of_a_missing_file_answers_from_the_listing_without_a_request(cloud, tmp_path):
    """`git clone` of a local repository unlinks each object's path before copying it there: an
    absent file is ENOENT from the folder's (cached) listing, not an rm request per file."""
    fs = _fs(cloud, tmp_path, delay=30)
    cloud.dirs.add("/repo")
    cloud.files["/repo/kept"] = b"k"
    fs.mkdir("/made", 0o755)
    cloud.calls.clear()
    for path in ("/made/a", "/made/b", "/repo/a", "/repo/b", "/repo/c"):
        with pytest.raises(fuse.FuseOSError) as err:
            fs.unlink(path)
        assert err.value.errno == 2  # ENOENT
    assert cloud.calls == ["ls"]  # /repo listed once; /made is known empty
    fs.unlink("/repo/kept")
    assert "/repo/kept" not in cloud.files


def test_lookups_in_a_folder_not_sent_yet_cost_no_request(cloud, tmp_path):
    """`git clone` stats many absent paths under the .git folders it has just made; those folders
    are not in the cloud yet, so the answer is known: no listing, even once entries expire."""
    fs = _fs(cloud, tmp_path, delay=30)
    fs.meta.ttl = 0.0  # every cached listing expired at once
    fs.mkdir("/clone", 0o755)
    fs.mkdir("/clone/objects", 0o755)
    cloud.calls.clear()
    for path in ("/clone/HEAD.lock", "/clone/objects/ab", "/clone/objects/info"):
        with pytest.raises(fuse.FuseOSError) as err:
            fs.getattr(path)
        assert err.value.errno == 2
    with pytest.raises(fuse.FuseOSError):
        fs.unlink("/clone/objects/x")
    assert cloud.calls == []


def test_a_close_costs_one_stat_however_many_files_are_cached(cloud, tmp_path, monkeypatch):
    """`tar x` of 3,000 files: the bound was checked by a stat of every cached file at each close
    (4.5 million stats, 200 s). The running total is the sizes as of each file's last close."""
    fs = _fs(cloud, tmp_path, delay=30)
    for i in range(200):
        _write(fs, f"/s{i}", b"x" * 10)
    stats = []
    real = os.stat
    monkeypatch.setattr(os, "stat", lambda p, *a, **k: (stats.append(p), real(p, *a, **k))[1])
    _write(fs, "/one-more", b"y" * 5)
    monkeypatch.setattr(os, "stat", real)
    assert len(stats) <= 2
    assert fs.cache.cached_bytes() == 200 * 10 + 5
    fs.unlink("/s0")
    fh = fs.open("/s1", os.O_WRONLY | os.O_TRUNC)
    fs.release("/s1", fh)
    assert fs.cache.cached_bytes() == 198 * 10 + 5


def test_lock_and_temporary_files_are_kept_back_while_git_renames_them(cloud, tmp_path):
    """git writes index.lock and tmp_obj_*, closes them and renames them moments later: sent at
    once, the rename would wait for the upload and then move the file in the cloud."""
    fs = _fs(cloud, tmp_path, delay=0.05)
    _write(fs, "/index.lock", b"index")
    _write(fs, "/tmp_obj_abc", b"object")
    _write(fs, "/plain", b"p")
    _eventually(lambda: "/plain" in cloud.files)
    time.sleep(0.2)
    assert set(cloud.files) == {"/plain"}
    cloud.calls.clear()
    fs.rename("/index.lock", "/index")
    fs.rename("/tmp_obj_abc", "/ab")
    assert "mv" not in cloud.calls and "rm" not in cloud.calls
    fs.cache.sync_all()
    assert cloud.files == {"/plain": b"p", "/index": b"index", "/ab": b"object"}
    _write(fs, "/held.lock", b"h")
    fs.cache.sync(["/held.lock"])  # fsync: sent at once all the same
    assert cloud.files["/held.lock"] == b"h"


def test_a_walk_of_sent_files_answers_from_the_listing_without_checking_each_copy(cloud, tmp_path):
    """`du`, `git status`: readdir and a stat of each file sent earlier. The listing answers; a
    cached copy is checked against the cloud only when it is read, not at every stat."""
    fs = _fs(cloud, tmp_path, delay=30)
    fs.mkdir("/t", 0o755)
    for i in range(50):
        _write(fs, f"/t/f{i}", b"z" * i)
    fs.cache.sync_all()
    fs.cache.ttl = 0.0  # every cached copy past its own timeout
    checked = []
    fs.cache.still_valid = lambda path, cached: checked.append(path) or True
    cloud.calls.clear()
    assert sorted(fs.readdir("/t", 0)) == sorted([".", "..", *(f"f{i}" for i in range(50))])
    assert sum(fs.getattr(f"/t/f{i}")["st_size"] for i in range(50)) == sum(range(50))
    assert checked == [] and cloud.calls == []
    _write(fs, "/t/new", b"n")  # not sent: listed from the cache
    fs.mkdir("/t/sub", 0o755)  # in the cached listing and in the cache's folders: listed once
    assert sorted(fs.readdir("/t", 0)) == sorted([".", "..", "new", "sub", *(f"f{i}" for i in range(50))])
    assert fs.getattr("/t/new")["st_size"] == 1
