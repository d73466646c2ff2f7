"""`hycloud mount DIR` as POSIX tools see it: `du` sizes, a quiet start, clean exits.

Each mount here is a real FUSE mount of the deployed local cloud, started as a user starts it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.conftest import HYCLOUD

CANNOT_MOUNT = (
    None
    if os.path.exists("/dev/fuse") and shutil.which("fusermount3")
    else "no /dev/fuse or fusermount3 here: FUSE mounts are impossible on this machine"
)
pytestmark = pytest.mark.skipif(CANNOT_MOUNT is not None, reason=CANNOT_MOUNT or "")
SIZES = [0, 1, 511, 512, 513, 1000, 4097, 100_000, 2 * 1024 * 1024 + 1]
EXIT_S = 5.0


@dataclass
class Mount:
    dir: Path
    proc: subprocess.Popen
    stderr: Path

    def is_mounted(self) -> bool:
        return subprocess.run(["mountpoint", "-q", str(self.dir)], check=False).returncode == 0

    def stop(self) -> None:
        if self.proc.poll() is None:
            subprocess.run(["fusermount3", "-u", "-z", str(self.dir)], check=False, timeout=30)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=20)
        if self.is_mounted():
            subprocess.run(["fusermount3", "-u", "-z", str(self.dir)], check=False, timeout=30)


def _start(user, base: Path) -> Mount:
    mnt, log = base / "mnt", base / "stderr.log"
    mnt.mkdir()
    env = {
        **os.environ,
        "HYCLOUD_ENDPOINT": user.deployment.api_url,
        "HYCLOUD_API_KEY": user.key,
        "HYCLOUD_CONFIG": "/nonexistent/config.json",
    }
    with open(log, "wb") as err:
        proc = subprocess.Popen([HYCLOUD, "mount", str(mnt)], env=env, stdout=subprocess.DEVNULL, stderr=err)
    mount = Mount(mnt, proc, log)
    deadline = time.monotonic() + 30
    while not os.path.ismount(mnt):
        if proc.poll() is not None or time.monotonic() > deadline:
            mount.stop()
            pytest.fail(f"mount did not appear: {log.read_text()}")
        time.sleep(0.2)
    return mount


@pytest.fixture
def mounted(alice, tmp_path) -> Iterator[Mount]:
    mount = _start(alice, tmp_path)
    yield mount
    mount.stop()


def _exits_within(proc: subprocess.Popen, seconds: float) -> float | None:
    t0 = time.monotonic()
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return None
    return time.monotonic() - t0


def _du(*args: str) -> int:
    out = subprocess.run(["du", *args], check=True, capture_output=True, text=True, timeout=60).stdout
    return int(out.split()[0])


def test_du_counts_the_files_sizes(mounted):
    folder = mounted.dir / f"du-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    (folder / "sub").mkdir()
    for i, size in enumerate(SIZES):
        (folder / ("sub" if i % 2 else "") / f"f{i}").write_bytes(b"x" * size)
    for i, size in enumerate(SIZES):
        st = os.stat(folder / ("sub" if i % 2 else "") / f"f{i}")
        assert (st.st_size, st.st_blocks) == (size, -(-size // 512)), size
    blocks = sum(-(-size // 512) for size in SIZES)
    assert _du("-sb", str(folder)) == sum(SIZES)
    assert _du("-s", "-B512", str(folder)) == blocks
    assert _du("-sk", str(folder)) == -(-blocks * 512 // 1024)
    assert _du("-s", str(folder)) == -(-blocks * 512 // 1024)  # du's default unit: 1024 bytes


def test_start_prints_no_libfuse_warning(mounted):
    os.listdir(mounted.dir)  # the mount serves requests
    assert "invalid max threads" not in mounted.stderr.read_text()


def test_fusermount_unmount_ends_the_process(mounted):
    (mounted.dir / f"u-{uuid.uuid4().hex[:8]}").write_bytes(b"busy for a while")
    os.listdir(mounted.dir)
    subprocess.run(["fusermount3", "-u", str(mounted.dir)], check=True, timeout=30)
    took = _exits_within(mounted.proc, EXIT_S)
    assert took is not None, f"mount process alive {EXIT_S} s after fusermount3 -u"
    assert mounted.proc.returncode == 0, mounted.stderr.read_text()
    assert not mounted.is_mounted()


def test_sigterm_unmounts_cleanly(mounted):
    (mounted.dir / f"t-{uuid.uuid4().hex[:8]}").write_bytes(b"before the signal")
    os.listdir(mounted.dir)
    mounted.proc.send_signal(signal.SIGTERM)
    took = _exits_within(mounted.proc, EXIT_S)
    assert took is not None, f"mount process alive {EXIT_S} s after SIGTERM"
    assert not mounted.is_mounted()
    assert os.listdir(mounted.dir) == []  # the plain folder again, not "Transport endpoint is not connected"
    assert "Traceback" not in mounted.stderr.read_text()
