"""What the kernel asks of a real FUSE mount of `HyCloudFuse` (over the in-memory cloud of
`mount_fake.py`): absent names and entries are kept by the kernel for the metadata timeout, so a
repeated lookup costs no request, while the mount's own creates, writes, renames and removals are
seen at once; libfuse's worker threads keep their Python thread state between requests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hycloud.mount import fuse_ops
from tests.unit.client.mount_fake import NEEDS_FUSE

ROOT = Path(__file__).resolve().parents[3]
TTL_S = 30.0  # long enough that no kernel entry expires during a test

pytestmark = NEEDS_FUSE


@dataclass
class FakeMount:
    dir: Path
    counts: Path
    proc: subprocess.Popen

    def ops(self) -> dict:
        """The mount's FUSE operations (count, errors) since the last call, and its kept thread states."""
        marker = Path(f"{self.counts}.mark")
        marker.write_text("step")
        deadline = time.monotonic() + 10
        while marker.exists():
            assert time.monotonic() < deadline, "the mount did not write its counters"
            time.sleep(0.01)
        return json.loads(self.counts.read_text().splitlines()[-1])

    def calls(self, name: str) -> int:
        return self.ops()["ops"].get(name, {}).get("n", 0)


@pytest.fixture(scope="module")
def mounted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeMount]:
    """One mount for the module (each test works under names of its own)."""
    tmp_path = tmp_path_factory.mktemp("kernel")
    mnt, counts = tmp_path / "mnt", tmp_path / "ops.jsonl"
    mnt.mkdir()
    env = {**os.environ, "HYCLOUD_MOUNT_PROFILE": str(counts)}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "client"), str(ROOT / "layers" / "core")])
    cmd = [sys.executable, "-m", "tests.unit.client.mount_fake", str(mnt), str(tmp_path), str(TTL_S)]
    log = tmp_path / "mount.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stderr=err)
    try:
        deadline = time.monotonic() + 30
        while not os.path.ismount(mnt):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        yield FakeMount(mnt, counts, proc)
    finally:
        subprocess.run(["fusermount3", "-u", "-z", str(mnt)], check=False)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


@pytest.fixture
def mount(mounted: FakeMount) -> FakeMount:
    mounted.ops()  # each test counts from its start
    return mounted


def test_an_absent_name_looked_up_again_asks_the_mount_once(mount):
    for _ in range(20):
        assert not (mount.dir / "d" / "absent").exists()
    assert mount.calls("getattr") <= 2  # /d (unless another test looked it up) and /d/absent, once


def test_an_entry_looked_up_again_asks_the_mount_once(mount):
    for _ in range(20):
        assert (mount.dir / "d" / "stored").stat().st_size == len(b"stored bytes")
    assert mount.calls("getattr") <= 2  # /d (unless another test looked it up) and /d/stored, once


def test_the_mounts_own_changes_are_seen_at_once_despite_the_kernels_caching(mount):
    path, moved = mount.dir / "d" / "new", mount.dir / "d" / "moved"
    assert not path.exists() and not moved.exists()  # both absent names now kept by the kernel
    path.write_bytes(b"abc")
    assert path.read_bytes() == b"abc" and path.stat().st_size == 3
    with open(path, "ab") as file:
        file.write(b"de")
    assert path.stat().st_size == 5
    os.utime(path, (1_000_000_000, 1_000_000_000))
    assert path.stat().st_mtime == 1_000_000_000
    path.rename(moved)
    assert not path.exists() and moved.read_bytes() == b"abcde"
    moved.unlink()
    assert not moved.exists()
    (mount.dir / "d" / "sub").mkdir()
    assert (mount.dir / "d" / "sub").is_dir()
    listed = os.listdir(mount.dir / "d")
    assert "sub" in listed and "stored" in listed and "new" not in listed and "moved" not in listed


def test_libfuse_workers_keep_their_python_thread_state_between_requests(mount):
    for i in range(300):
        assert not (mount.dir / "d" / f"absent-{i}").exists()
    counted = mount.ops()
    assert counted["ops"]["getattr"]["n"] >= 300
    assert 1 <= counted["kept_thread_states"] <= fuse_ops.WORKERS


@pytest.mark.parametrize("ttl", [0.0, 0.5, 2.0, 60.0])
def test_the_kernel_keeps_entries_and_absent_names_as_long_as_the_mount_does(ttl):
    options = fuse_ops._fuse_options(ttl)
    assert options["attr_timeout"] == options["entry_timeout"] == options["negative_timeout"] == ttl


def test_libfuse_workers_never_retire():
    options = fuse_ops._fuse_options(2.0)
    assert options["max_idle_threads"] == options["max_threads"] == fuse_ops.WORKERS


def test_a_file_read_again_is_served_from_the_kernels_pages_until_it_changes(mount):
    path = mount.dir / "d" / "written"
    path.write_bytes(b"stored bytes")
    time.sleep(0.5)  # sent meanwhile (its entry's mtime then comes from the listing, rounded)
    for _ in range(2):  # libfuse trusts the kernel's pages from the second open on
        assert path.read_bytes() == b"stored bytes"
    mount.ops()
    for _ in range(5):
        assert path.read_bytes() == b"stored bytes"
    assert mount.calls("read") == 0
    path.write_bytes(b"changed here")  # same size: the mtime tells
    assert path.read_bytes() == b"changed here"
    with open(path, "ab") as file:
        file.write(b"!")
    assert path.read_bytes() == b"changed here!"
