"""`hycloud mount --native` over the in-memory cloud: the compiled daemon (client/native) serves a
real FUSE mount from its local copy, and this process lists, fetches and sends (mount/native.py,
mount/changes.py). What only the deployment shows is in tests/e2e/test_mount_native.py."""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from hycloud.mount.native import mount_native
from hycloud_core.crypto import header as hdr
from hycloud_core.errors import HyCloudError
from infra.local import uring_switch
from tests.unit.client.mount_fake import NEEDS_FUSE
from tests.unit.client.test_mount_writeback import FakeCloud

MiB = 1024 * 1024
pytestmark = NEEDS_FUSE


@dataclass
class Native:
    dir: Path
    cloud: FakeCloud
    thread: threading.Thread
    outcome: dict = field(default_factory=dict)

    def unmount(self) -> HyCloudError | None:
        """Unmounted, and everything sent; the error the mount ended with, if any."""
        subprocess.run(["fusermount3", "-u", str(self.dir)], check=True, timeout=30)
        self.thread.join(timeout=60)
        assert not self.thread.is_alive(), "the mount did not end after fusermount3 -u"
        return self.outcome.get("error")


def _mounted(tmp_path: Path, cloud: FakeCloud, **options: object) -> Native:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    outcome: dict = {}

    def run() -> None:
        try:
            mount_native(cloud, str(mnt), str(tmp_path), upload=cloud.upload, signals=False, **options)  # type: ignore[arg-type]
        except HyCloudError as err:
            outcome["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not os.path.ismount(mnt):
        assert thread.is_alive() and time.monotonic() < deadline, f"not mounted: {outcome}"
        time.sleep(0.05)
    return Native(mnt, cloud, thread, outcome)


@pytest.fixture(params=["/dev/fuse", "io_uring"])
def transport(request: pytest.FixtureRequest) -> str:
    """How the kernel's requests reach the daemon: io_uring needs Linux 6.14+ with the fuse
    module's enable_uring on (a test run holds it on as root: infra/local/uring_switch.py)."""
    if request.param == "io_uring" and not uring_switch.in_use():
        pytest.skip("no FUSE over io_uring here: Linux 6.14+ with the fuse module's enable_uring on")
    return request.param


@pytest.fixture
def native(tmp_path: Path, transport: str) -> Iterator[Native]:
    cloud = FakeCloud()
    cloud.dirs.update({"/d", "/d/empty"})
    cloud.files |= {"/d/stored": b"stored bytes", "/d/other": b"other bytes"}
    heard: list[str] = []
    mount = _mounted(tmp_path, cloud, io_uring=transport == "io_uring", on_mounted=heard.append)
    deadline = time.monotonic() + 5
    while not heard and time.monotonic() < deadline:
        time.sleep(0.02)
    assert heard == [transport], f"asked for {transport}, served over {heard}"
    yield mount
    if os.path.ismount(mount.dir):
        subprocess.run(["fusermount3", "-u", "-z", str(mount.dir)], check=False, timeout=30)
        mount.thread.join(timeout=60)


def test_a_cloud_file_is_a_stub_of_its_size_until_its_first_read(native: Native) -> None:
    stored = native.dir / "d" / "stored"
    st = stored.stat()
    assert st.st_size == 12 and st.st_blocks == 1  # du counts the cloud's bytes, not a sparse file
    assert "get" not in native.cloud.calls
    assert stored.read_bytes() == b"stored bytes"
    assert stored.read_bytes() == b"stored bytes"
    assert native.cloud.calls.count("get") == 1
    assert sorted(os.listdir(native.dir / "d")) == ["empty", "other", "stored"]
    assert native.cloud.calls.count("ls") == 2  # the root and /d, each once
    assert native.unmount() is None
    assert native.cloud.batches == []  # read only: nothing sent


def test_files_written_reach_the_cloud_in_bundles_and_a_renamed_new_file_costs_no_move(
    native: Native,
) -> None:
    tree = {f"/w/sub{i % 3}/f{i}.txt": os.urandom(100 + i * 37) for i in range(30)}
    for path, data in tree.items():
        local = native.dir / path.lstrip("/")
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(data)
    tmp = native.dir / "w" / "tmp_obj_1"
    tmp.write_bytes(b"renamed once written")
    tmp.rename(native.dir / "w" / "final")
    (native.dir / "w" / "gone").write_bytes(b"removed before it was sent")
    (native.dir / "w" / "gone").unlink()
    (native.dir / "w" / "made-empty").mkdir()
    assert native.unmount() is None
    cloud = native.cloud
    assert {p: cloud.files[p] for p in tree} == tree
    assert cloud.files["/w/final"] == b"renamed once written"
    assert "/w/tmp_obj_1" not in cloud.files and "/w/gone" not in cloud.files
    assert "/w/made-empty" in cloud.dirs
    assert "mv" not in cloud.calls and "rm" not in cloud.calls
    assert len(cloud.batches) <= 3, cloud.batches


def test_moves_and_removals_of_cloud_files_are_sent_in_order(native: Native) -> None:
    d = native.dir / "d"
    (d / "stored").rename(d / "renamed")  # never read: moved in the cloud, not downloaded
    (d / "other").unlink()
    (d / "empty").rmdir()
    (d / "renamed").write_bytes(b"then rewritten")  # after the move: the new name gets it
    assert native.unmount() is None
    cloud = native.cloud
    assert "/d/stored" not in cloud.files and "/d/other" not in cloud.files
    assert cloud.files["/d/renamed"] == b"then rewritten"
    assert "/d/empty" not in cloud.dirs
    assert [c for c in cloud.calls if c in ("mv", "rm", "rmdir")] == ["mv", "rm", "rmdir"]


def test_fsync_returns_once_the_file_is_in_the_cloud(native: Native) -> None:
    path = native.dir / "durable.bin"
    with open(path, "wb") as f:
        f.write(b"x" * 5000)
        f.flush()
        os.fsync(f.fileno())
        assert native.cloud.files["/durable.bin"] == b"x" * 5000
    assert native.unmount() is None


def test_fsync_sends_its_file_alone_not_every_change_waiting(native: Native) -> None:
    """git's index-pack fsyncs its pack and index while the rest of a clone's new files and
    folders wait to be gathered: each fsync paid for all of them (2.7 s a clone here)."""
    for i in range(20):
        (native.dir / "repo" / f"dir{i}").mkdir(parents=True)
        (native.dir / "repo" / f"dir{i}" / "f").write_bytes(b"waiting")
    (native.dir / "repo" / "empty").mkdir()
    path = native.dir / "repo" / "dir3" / "pack.bin"
    with open(path, "wb") as f:
        f.write(b"p" * 5000)
        f.flush()
        os.fsync(f.fileno())
        assert native.cloud.files["/repo/dir3/pack.bin"] == b"p" * 5000
        assert native.cloud.batches == [["/repo/dir3/pack.bin"]]
        assert "mkdir" not in native.cloud.calls
    assert native.unmount() is None
    assert native.cloud.files["/repo/dir7/f"] == b"waiting" and "/repo/empty" in native.cloud.dirs


def test_fsync_of_a_new_folder_makes_it_in_the_cloud(native: Native) -> None:
    folder = native.dir / "made" / "here"
    folder.mkdir(parents=True)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    assert "/made/here" in native.cloud.dirs
    assert native.unmount() is None


def test_a_git_commit_in_the_mount_lands_whole_in_the_cloud(native: Native, tmp_path: Path) -> None:
    repo = native.dir / "repo"
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a"}
    env["GIT_COMMITTER_EMAIL"] = "a@b"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    for i in range(12):
        (repo / f"m{i}.py").write_text(f"print({i})\n" * (i + 1))
    for cmd in (["add", "."], ["commit", "-qm", "first"]):
        subprocess.run(["git", "-C", str(repo), *cmd], check=True, env=env)
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    )
    assert native.unmount() is None
    copy = tmp_path / "from-cloud"
    for path, data in native.cloud.files.items():
        if path.startswith("/repo/"):
            (copy / path[len("/repo/") :]).parent.mkdir(parents=True, exist_ok=True)
            (copy / path[len("/repo/") :]).write_bytes(data)
    check = subprocess.run(["git", "-C", str(copy), "fsck", "--strict"], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    again = subprocess.run(["git", "-C", str(copy), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert again.stdout == head.stdout
    digest = hashlib.sha256(native.cloud.files["/repo/m11.py"]).hexdigest()
    assert digest == hashlib.sha256(b"print(11)\n" * 12).hexdigest()


def test_an_encrypted_folder_is_refused_not_shown_sealed(native: Native) -> None:
    native.cloud.dirs.add("/sec")
    native.cloud.files[f"/sec/{hdr.NAME}"] = b"header"
    with pytest.raises(PermissionError):
        os.listdir(native.dir / "sec")
    assert native.unmount() is None


def test_files_the_cloud_refused_are_kept_and_the_unmount_says_so(native: Native) -> None:
    native.cloud.fail = "quota-exceeded"
    (native.dir / "big.bin").write_bytes(b"refused")
    error = native.unmount()
    assert error is not None and error.code == "not-sent", error
    kept = Path(str(error.message).rsplit(" kept in ", 1)[1])
    assert (kept / "big.bin").read_bytes() == b"refused"


def test_a_mount_that_cannot_start_says_so_and_leaves_no_local_copy(tmp_path: Path) -> None:
    cloud = FakeCloud()
    with pytest.raises(HyCloudError) as err:
        mount_native(cloud, str(tmp_path / "missing"), str(tmp_path), upload=cloud.upload, signals=False)  # type: ignore[arg-type]
    assert err.value.code == "mount-failed"
    assert not list(tmp_path.glob("hycloud-native-*"))


def test_past_the_cache_size_the_file_used_longest_ago_becomes_a_stub_again(tmp_path: Path) -> None:
    cloud = FakeCloud()
    cloud.dirs.add("/big")
    blobs = {f"/big/f{i}": os.urandom(MiB) for i in range(3)}
    cloud.files |= blobs
    mount = _mounted(tmp_path, cloud, cache_size=MiB * 5 // 2)  # evicts down to 2 MiB
    try:
        for path in blobs:  # the third fetch goes past the bound
            assert (mount.dir / path.lstrip("/")).read_bytes() == blobs[path]
        (local,) = tmp_path.glob("hycloud-native-*/tree")
        deadline = time.monotonic() + 10
        while (local / "big" / "f0").stat().st_blocks:
            assert time.monotonic() < deadline, "f0 was not evicted"
            time.sleep(0.05)
        assert (local / "big" / "f1").stat().st_blocks and (local / "big" / "f2").stat().st_blocks
        assert (mount.dir / "big" / "f0").stat().st_size == MiB  # still the cloud's size here
        gets = cloud.calls.count("get")
        fd = os.open(mount.dir / "big" / "f0", os.O_RDONLY)  # no request: opens are not asked
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # the kernel's pages of it gone too
        os.close(fd)
        assert (mount.dir / "big" / "f0").read_bytes() == blobs["/big/f0"]
        assert cloud.calls.count("get") == gets + 1  # fetched again
    finally:
        assert mount.unmount() is None
    assert cloud.batches == []  # nothing written: eviction sent nothing


def test_a_file_changed_since_it_was_sent_is_not_evicted(tmp_path: Path) -> None:
    cloud = FakeCloud()
    cloud.dirs.add("/big")
    cloud.files["/big/other"] = os.urandom(MiB)
    mount = _mounted(tmp_path, cloud, cache_size=MiB * 5 // 4)  # evicts down to 1 MiB
    try:
        mine = mount.dir / "big" / "mine"
        first = os.urandom(MiB)
        mine.write_bytes(first)
        deadline = time.monotonic() + 10
        while cloud.files.get("/big/mine") != first:  # sent: now it may be evicted
            assert time.monotonic() < deadline, "not sent"
            time.sleep(0.02)
        with open(mine, "r+b") as f:  # changed in place; then a fetch goes past the bound at once
            f.seek(10)
            f.write(b"changed after it was sent")
        assert (mount.dir / "big" / "other").read_bytes() == cloud.files["/big/other"]
        expected = first[:10] + b"changed after it was sent" + first[35:]
        assert mine.read_bytes() == expected
    finally:
        assert mount.unmount() is None
    assert cloud.files["/big/mine"] == expected


def test_another_clients_changes_are_merged_when_a_folder_is_used_past_its_timeout(tmp_path: Path) -> None:
    cloud = FakeCloud()
    cloud.dirs.add("/s")
    cloud.files |= {"/s/a": b"version one", "/s/b": b"b in the cloud", "/s/gone": b"removed elsewhere"}
    mount = _mounted(tmp_path, cloud, ttl=0.5)
    try:
        s = mount.dir / "s"
        assert (s / "a").read_bytes() == b"version one"
        cloud.gate.clear()  # this mount's uploads wait: b's change below is not sent yet
        (s / "b").write_bytes(b"b changed here")
        cloud.files["/s/a"], cloud.mtimes["/s/a"] = b"version two, longer", 2.0  # another client
        cloud.files["/s/b"], cloud.mtimes["/s/b"] = b"b changed elsewhere", 2.0
        cloud.files["/s/new"] = b"new elsewhere"
        cloud.dirs.add("/s/sub")
        del cloud.files["/s/gone"]
        deadline = time.monotonic() + 10
        while sorted(os.listdir(s)) != ["a", "b", "new", "sub"]:
            assert time.monotonic() < deadline, os.listdir(s)
            time.sleep(0.2)  # each listing past the timeout asks for a merge; it answers at once
        while (s / "a").stat().st_size != len(b"version two, longer"):
            assert time.monotonic() < deadline, (s / "a").stat()
            time.sleep(0.2)
        assert (s / "a").read_bytes() == b"version two, longer"
        assert (s / "new").read_bytes() == b"new elsewhere"
        assert (s / "sub").is_dir()
        assert (s / "b").read_bytes() == b"b changed here"  # not sent yet: never merged over
        cloud.gate.set()
    finally:
        cloud.gate.set()
        assert mount.unmount() is None
    assert cloud.files["/s/b"] == b"b changed here"  # the last writer wins
    assert "/s/gone" not in cloud.files and cloud.files["/s/a"] == b"version two, longer"
