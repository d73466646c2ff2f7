"""A real FUSE mount of the deployed local cloud, started as a user starts it (`hycloud mount DIR`)
and stopped so that no mount is left behind: shared by the mount tests."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.conftest import HYCLOUD

CANNOT_MOUNT = (
    None
    if os.path.exists("/dev/fuse") and shutil.which("fusermount3")
    else "no /dev/fuse or fusermount3 here: FUSE mounts are impossible on this machine"
)


@dataclass
class Mount:
    dir: Path
    proc: subprocess.Popen
    stderr: Path

    def is_mounted(self) -> bool:
        return subprocess.run(["mountpoint", "-q", str(self.dir)], check=False).returncode == 0

    def in_mount_table(self) -> bool:
        """Also true of a stale mount (its process gone), which `mountpoint` cannot stat."""
        return any(
            line.split()[1] == str(self.dir) for line in Path("/proc/self/mounts").read_text().splitlines()
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            subprocess.run(["fusermount3", "-u", "-z", str(self.dir)], check=False, timeout=30)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=20)
        if self.in_mount_table():
            subprocess.run(["fusermount3", "-u", "-z", str(self.dir)], check=False, timeout=30)


def _default_hangup() -> None:
    """The mount as a terminal starts it: a run under `nohup` (as CI's may be) hands every child
    SIGHUP ignored, and libfuse takes over only signals left at their default, so the mount
    would rightly shrug off the SIGHUP test's hangup, as `nohup hycloud mount` should."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def start_mount(user, base: Path, endpoint: str | None = None, *flags: str) -> Mount:
    mnt, log = base / "mnt", base / "stderr.log"
    mnt.mkdir()
    env = user.cli_env(**({"HYCLOUD_ENDPOINT": endpoint} if endpoint else {}))
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [HYCLOUD, "mount", *flags, str(mnt)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            preexec_fn=_default_hangup,
        )
    mount = Mount(mnt, proc, log)
    deadline = time.monotonic() + 30
    while not os.path.ismount(mnt):
        if proc.poll() is not None or time.monotonic() > deadline:
            mount.stop()
            pytest.fail(f"mount did not appear: {log.read_text()}")
        time.sleep(0.2)
    return mount
