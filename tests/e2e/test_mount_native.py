"""`hycloud mount --native DIR` against the deployed cloud: files already in the cloud (small in
EFS, large in S3 behind a link file) read byte-exact through the compiled daemon, and a git
working copy made in the mount, with moves and removals, is in the cloud once the unmount ends."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from infra.local import uring_switch
from tests.e2e.mounting import CANNOT_MOUNT, start_mount

MiB = 1024 * 1024
GIT_ENV = {
    "GIT_AUTHOR_NAME": "a",
    "GIT_AUTHOR_EMAIL": "a@b",
    "GIT_COMMITTER_NAME": "a",
    "GIT_COMMITTER_EMAIL": "a@b",
}
pytestmark = pytest.mark.skipif(CANNOT_MOUNT is not None, reason=CANNOT_MOUNT or "")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, env=env, capture_output=True, text=True
    ).stdout


def test_a_working_copy_in_the_native_mount_is_in_the_cloud_after_the_unmount(alice, tmp_path):
    top, rng = f"/native-{uuid.uuid4().hex[:8]}", random.Random(7)
    small, large = rng.randbytes(3000), rng.randbytes(5 * MiB + 3)
    sdk = alice.sdk()
    (tmp_path / "small").write_bytes(small)
    (tmp_path / "large").write_bytes(large)
    sdk.put(tmp_path / "small", f"{top}/stored/small.txt", parents=True)
    sdk.put(tmp_path / "large", f"{top}/stored/large.bin")
    sdk.put(tmp_path / "small", f"{top}/stored/doomed.txt")

    mount = start_mount(alice, tmp_path, None, "--native")
    try:
        transport = "io_uring" if uring_switch.in_use() else "/dev/fuse"
        said = f"mounted on {mount.dir}: the kernel's requests come over {transport}"
        deadline = time.monotonic() + 10
        while said not in mount.stderr.read_text():  # the user is told how requests come
            assert time.monotonic() < deadline, mount.stderr.read_text()
            time.sleep(0.1)
        here = mount.dir / top.lstrip("/")
        assert (here / "stored" / "large.bin").stat().st_size == len(large)
        assert _sha((here / "stored" / "large.bin").read_bytes()) == _sha(large)  # fetched at first read
        assert (here / "stored" / "small.txt").read_bytes() == small
        (here / "stored" / "small.txt").rename(here / "stored" / "renamed.txt")
        (here / "stored" / "doomed.txt").unlink()
        repo = here / "repo"
        _git(mount.dir, "init", "-q", str(repo))
        for i in range(20):
            (repo / "src" / f"m{i}.py").parent.mkdir(exist_ok=True)
            (repo / "src" / f"m{i}.py").write_text(f"VALUE = {i}\n" * (i + 1))
        _git(repo, "add", ".")
        _git(repo, "commit", "-qm", "first")
        head = _git(repo, "rev-parse", "HEAD")
    finally:
        subprocess.run(["fusermount3", "-u", str(mount.dir)], check=True, timeout=30)
        assert mount.proc.wait(timeout=120) == 0, mount.stderr.read_text()
        mount.stop()

    names = {e["name"] for e in sdk.ls(f"{top}/stored")}
    assert names == {"large.bin", "renamed.txt"}, names
    got = tmp_path / "back"
    sdk.get(f"{top}/stored/renamed.txt", got)
    assert got.read_bytes() == small
    alice.cli("get", "-r", f"{top}/repo", str(tmp_path / "clone"))
    copy = tmp_path / "clone"
    assert _git(copy, "rev-parse", "HEAD") == head
    _git(copy, "fsck", "--strict")
    assert (copy / "src" / "m19.py").read_text() == "VALUE = 19\n" * 20


def test_sigterm_unmounts_the_native_mount_and_sends_what_it_holds(alice, tmp_path):
    top = f"/native-term-{uuid.uuid4().hex[:8]}"
    mount = start_mount(alice, tmp_path, None, "--native")
    try:
        (mount.dir / top.lstrip("/")).mkdir()
        (mount.dir / top.lstrip("/") / "late.txt").write_bytes(b"written just before SIGTERM")
        mount.proc.send_signal(signal.SIGTERM)
        assert mount.proc.wait(timeout=120) == 0, mount.stderr.read_text()
        assert not mount.in_mount_table()
    finally:
        mount.stop()
    got = tmp_path / "late"
    alice.sdk().get(f"{top}/late.txt", got)
    assert got.read_bytes() == b"written just before SIGTERM"


def test_another_clients_changes_reach_the_native_mount_past_its_timeout(alice, tmp_path):
    top, sdk = f"/native-merge-{uuid.uuid4().hex[:8]}", alice.sdk()
    (tmp_path / "v1").write_bytes(b"first version")
    (tmp_path / "v2").write_bytes(b"second version, from another client")
    sdk.put(tmp_path / "v1", f"{top}/shared.txt", parents=True)
    mount = start_mount(alice, tmp_path, None, "--native", "--metadata-timeout", "1")
    try:
        here = mount.dir / top.lstrip("/")
        assert (here / "shared.txt").read_bytes() == b"first version"
        sdk.put(tmp_path / "v2", f"{top}/shared.txt")  # another client, through the API
        sdk.put(tmp_path / "v1", f"{top}/added.txt")
        deadline = time.monotonic() + 30
        while sorted(os.listdir(here)) != ["added.txt", "shared.txt"] or (
            here / "shared.txt"
        ).stat().st_size != len(b"second version, from another client"):
            assert time.monotonic() < deadline, os.listdir(here)
            time.sleep(0.5)  # each use past the timeout lists the folder again, in the background
        assert (here / "shared.txt").read_bytes() == b"second version, from another client"
        assert (here / "added.txt").read_bytes() == b"first version"
    finally:
        subprocess.run(["fusermount3", "-u", str(mount.dir)], check=True, timeout=30)
        assert mount.proc.wait(timeout=120) == 0, mount.stderr.read_text()
        mount.stop()
