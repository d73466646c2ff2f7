"""What the mount answers locally, with no request and no needless disk work: the root's stat, a
created file's empty copy left untruncated (ext4 flushes a file truncated to 0 at its close), and
the profile counters that show where a mount's time goes."""

from __future__ import annotations

import inspect
import os
import threading
import time

import pytest
import requests

from hycloud.mount import handles, profile
from tests.unit.client.test_mount_writeback import FakeCloud, _eventually, _fs, _write


@pytest.fixture
def cloud() -> FakeCloud:
    return FakeCloud()


def test_the_roots_stat_asks_nothing(cloud, tmp_path):
    fs = _fs(cloud, tmp_path)
    try:
        for _ in range(3):
            assert fs.getattr("/")["st_mode"] & 0o040000
        assert cloud.calls == []
    finally:
        fs.cache.stop()


def test_a_created_file_is_not_truncated_and_an_empty_one_is_still_sent(cloud, tmp_path, monkeypatch):
    truncated: list[int] = []
    real = os.ftruncate
    monkeypatch.setattr(handles.os, "ftruncate", lambda fd, n: (truncated.append(n), real(fd, n)))
    fs = _fs(cloud, tmp_path)
    try:
        _write(fs, "/made.txt", b"hello")
        fh = fs.create("/empty.txt", 0o644)
        fs.release("/empty.txt", fh)
        assert truncated == []
        _eventually(lambda: cloud.files.get("/made.txt") == b"hello" and cloud.files.get("/empty.txt") == b"")
    finally:
        fs.cache.stop()


def test_an_open_with_o_trunc_still_empties_a_file_with_bytes(cloud, tmp_path):
    fs = _fs(cloud, tmp_path)
    try:
        _write(fs, "/a.txt", b"old bytes")
        fh = fs.open("/a.txt", os.O_WRONLY | os.O_TRUNC)
        fs.write("/a.txt", b"new", 0, fh)
        fs.release("/a.txt", fh)
        assert fs.getattr("/a.txt")["st_size"] == 3
        _eventually(lambda: cloud.files.get("/a.txt") == b"new")
    finally:
        fs.cache.stop()


class Ops:
    """Two FUSE operations, one of which makes an HTTP request."""

    def getattr(self, path: str) -> dict:
        if path == "/missing":
            raise FileNotFoundError(path)
        return {}

    def open(self, path: str, flags: int) -> int:
        session = requests.Session()
        session.send(requests.Request("GET", "http://cloud.invalid/v1/stat?path=" + path).prepare())
        return 1


@pytest.fixture
def counted(monkeypatch):
    """`requests.Session.send` answered locally, then wrapped by the profile (restored after)."""
    monkeypatch.setattr(requests.Session, "send", lambda self, request, **kw: requests.Response())
    ops, prof = Ops(), profile.Profile()
    profile.instrument(ops, ["getattr", "open"], prof)
    return ops, prof


def test_the_profile_counts_each_operation_and_the_requests_made_under_it(counted):
    ops, prof = counted
    ops.getattr("/a")
    with pytest.raises(FileNotFoundError):
        ops.getattr("/missing")
    ops.open("/a", 0)
    thread = threading.Thread(
        target=requests.Session().get, args=("http://cloud.invalid/v1/dirs",), name="bg"
    )
    thread.start()
    thread.join()
    taken = prof.reset()
    assert taken["ops"]["getattr"]["n"] == 2 and taken["ops"]["getattr"]["errors"] == 1
    assert taken["ops"]["open"]["n"] == 1
    assert {k: v["n"] for k, v in taken["http"].items()} == {
        "open GET /v1/stat": 1,
        "background:bg GET /v1/dirs": 1,
    }
    assert prof.reset() == {"ops": {}, "http": {}}  # counted again from zero


def test_stats_under_folders_known_plain_skip_the_encrypted_folder_lookup(cloud, tmp_path, monkeypatch):
    cloud.dirs.add("/d")
    cloud.files["/d/f"] = b"f"
    fs = _fs(cloud, tmp_path)
    try:
        fs.getattr("/d")  # as the kernel walks: lists / then /d, both learnt to hold no folder header
        fs.getattr("/d/f")
        located: list[str] = []
        real = fs.sealed.view.locate
        monkeypatch.setattr(
            fs.sealed.view, "locate", lambda path, *a, **k: (located.append(path), real(path, *a, **k))[1]
        )
        assert fs.getattr("/d/f")["st_size"] == 1
        with pytest.raises(OSError):
            fs.getattr("/d/absent")
        assert located == []
        fs.encrypted.note("/d", True)  # a folder header seen: the view decides again
        with pytest.raises(OSError):
            fs.getattr("/d/absent")
        assert located != []
    finally:
        fs.cache.stop()


def test_mfusepy_reads_creates_signature_quickly_and_passes_it_the_flags(cloud, tmp_path):
    """mfusepy inspects `create` at every file created: through the decorators that took about
    250 µs; its signature kept ready, a few (the bound is loose for a loaded machine)."""
    fs = _fs(cloud, tmp_path)
    try:
        assert list(inspect.signature(fs.create).parameters) == ["path", "mode", "fi"]
        best = float("inf")
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(100):
                inspect.signature(fs.create)
            best = min(best, (time.perf_counter() - started) / 100)
        assert best < 80e-6, f"{best * 1e6:.0f} µs per inspection"
    finally:
        fs.cache.stop()
