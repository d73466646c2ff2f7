"""The operation queue: held while the controller answers 503, merged, kept across a restart."""

from __future__ import annotations

import os

import pytest

from hycloud.sync.queue import OperationQueue, new_op
from hycloud_core import content
from hycloud_core.control.elimination import LocalOp
from hycloud_core.control.fop import OpKind
from hycloud_core.errors import HyCloudError
from tests.unit.sync_fake_cloud import FakeCloud


class BusyCloud:
    """Refuses every change with 503 while `busy`; records what it carried out."""

    def __init__(self) -> None:
        self.busy = True
        self.done: list[str] = []
        self.store = type("S", (), {"rate": staticmethod(lambda kind: None)})()

    def _change(self, what: str) -> dict:
        if self.busy:
            raise HyCloudError("overloaded", code="overloaded", status=503)
        self.done.append(what)
        return {}

    def put(self, local, remote, **_):
        return self._change(f"put {remote}")

    def rm(self, path, expect=None):
        return self._change(f"rm {path}")

    def mkdir(self, path, **_):
        return self._change(f"mkdir {path}")


@pytest.fixture
def files(tmp_path):
    for name in ("a.txt", "x.txt"):
        (tmp_path / name).write_bytes(b"data")
    return tmp_path


def test_a_held_upload_then_its_delete_sends_neither_and_the_queue_survives_a_restart(files, monkeypatch):
    monkeypatch.setattr("hycloud.sync.queue.FIRST_WAIT", 0.0)
    cloud, folder = BusyCloud(), files / "queue"
    queue = OperationQueue(cloud, "pair", directory=folder)
    queue.submit(new_op(OpKind.UPLOAD, "/w/a.txt", creates=True, local=str(files / "a.txt")))
    queue.submit(new_op(OpKind.UPLOAD, "/w/x.txt", creates=True, local=str(files / "x.txt")))
    queue.submit(new_op(OpKind.DELETE, "/w/x.txt"))
    assert [op.path for op in queue.pending()] == ["/w/a.txt"] and queue.eliminated == 2
    assert cloud.done == []
    restarted = OperationQueue(cloud, "pair", directory=folder)  # a new process, same journal
    assert [op.path for op in restarted.pending()] == ["/w/a.txt"]
    cloud.busy = False
    assert restarted.flush() == 1 and cloud.done == ["put /w/a.txt"]
    assert OperationQueue(cloud, "pair", directory=folder).pending() == []


def test_on_a_clear_path_operations_go_at_once(files):
    cloud = BusyCloud()
    cloud.busy = False
    queue = OperationQueue(cloud, "pair", directory=files / "q")
    queue.submit(new_op(OpKind.MKDIR, "/w/d"))
    assert cloud.done == ["mkdir /w/d"] and queue.pending() == []


def test_a_saturated_link_holds_new_operations(files):
    cloud = BusyCloud()
    cloud.busy = False
    queue = OperationQueue(cloud, "pair", directory=files / "q")
    queue.link.capacity = 1000.0
    queue.link(10_000)  # 5,000 B/s over the window: above 90% of capacity
    queue.submit(new_op(OpKind.MKDIR, "/w/d"))
    assert cloud.done == [] and len(queue.pending()) == 1


@pytest.mark.parametrize("ours_newer", [True, False])
def test_a_watched_edit_meeting_another_devices_version_keeps_both(tmp_path, monkeypatch, ours_newer):
    """The queue's upload names the version this device last agreed on; another device wrote the
    path since: the newer by mtime stays at the path, the other is kept beside it."""
    monkeypatch.setenv("HYCLOUD_DEVICE", "laptop")
    cloud = _cloud()
    local = tmp_path / "a"
    local.write_bytes(b"mine")
    os.utime(local, (5000.0 if ours_newer else 1000.0,) * 2)
    cloud.files["/w/a"] = (b"theirs", 3000.0)  # written elsewhere since this device agreed on "old"
    agreed = content.hash_bytes(b"old")
    queue = OperationQueue(cloud, "pair", directory=tmp_path / "q", seen=lambda op: agreed)
    queue.submit(new_op(OpKind.UPLOAD, "/w/a", local=str(local), rel="a"))
    queue.submit(new_op(OpKind.DELETE, "/w/b", rel="b"))  # nothing there: nothing to do
    copies = {p: d for p, (d, _) in cloud.files.items() if p.startswith("/w/a.conflict-")}
    assert queue.failed == [] and len(copies) == 1
    winner, loser = (b"mine", b"theirs") if ours_newer else (b"theirs", b"mine")
    assert cloud.files["/w/a"][0] == winner and list(copies.values()) == [loser]


def _cloud() -> FakeCloud:
    """The fake cloud with what the queue asks besides: the link's rate and a file's stat."""
    cloud = FakeCloud()
    cloud.store.rate = staticmethod(lambda kind: None)
    cloud.stat = lambda path: {"mtime": cloud.files[path][1]}
    return cloud


def _other_device_writes_at(cloud: FakeCloud, wanted, times: int = 1) -> list[str]:
    """Another device writes a file at a move's destination just before the move reaches it."""
    written: list[str] = []

    def before(src: str, dst: str) -> None:
        if wanted(dst) and dst not in cloud.files and len(written) < times:
            written.append(dst)
            cloud.files[dst] = (f"another device's {dst}".encode(), 4000.0)

    cloud.before_move = before
    return written


def test_a_queued_rename_never_replaces_what_another_device_just_wrote_at_its_destination(
    tmp_path, monkeypatch
):
    """The destination was free when this device renamed its file; another device wrote a file
    there before the move reached the cloud. The move names its destination as absent, so it is
    refused, and the renamed file goes beside theirs under a conflict name: both are kept."""
    monkeypatch.setenv("HYCLOUD_DEVICE", "laptop")
    cloud = _cloud()
    cloud.files["/w/a"] = (b"mine", 5000.0)
    written = _other_device_writes_at(cloud, lambda dst: dst == "/w/b")
    queue = OperationQueue(cloud, "pair", directory=tmp_path / "q")
    queue.submit(LocalOp("rename", OpKind.MOVE, "/w/a", dest="/w/b"))
    assert written == ["/w/b"] and queue.failed == []
    assert cloud.files["/w/b"][0] == b"another device's /w/b"
    assert "/w/a" not in cloud.files
    copies = {p: d for p, (d, _) in cloud.files.items() if p.startswith("/w/b.conflict-laptop-")}
    assert list(copies.values()) == [b"mine"]


def test_setting_the_clouds_version_aside_never_replaces_a_copy_that_took_the_conflict_name(
    tmp_path, monkeypatch
):
    """A watched edit, newer than another device's version, sets the cloud's version aside under
    a conflict name; another device's conflict copy of the same second took that name meanwhile.
    The move is refused rather than replacing it, and the next free name is used: all three kept."""
    monkeypatch.setenv("HYCLOUD_DEVICE", "laptop")
    cloud = _cloud()
    local = tmp_path / "a"
    local.write_bytes(b"mine")
    os.utime(local, (5000.0, 5000.0))
    cloud.files["/w/a"] = (b"theirs", 3000.0)
    written = _other_device_writes_at(cloud, lambda dst: dst.startswith("/w/a.conflict-"))
    agreed = content.hash_bytes(b"old")
    queue = OperationQueue(cloud, "pair", directory=tmp_path / "q", seen=lambda op: agreed)
    queue.submit(new_op(OpKind.UPLOAD, "/w/a", local=str(local), rel="a"))
    assert len(written) == 1 and queue.failed == []
    assert cloud.files["/w/a"][0] == b"mine"
    assert cloud.files[written[0]][0] == f"another device's {written[0]}".encode()
    kept = sorted(d for p, (d, _) in cloud.files.items() if p.startswith("/w/a"))
    assert kept == sorted([b"mine", b"theirs", f"another device's {written[0]}".encode()])


def test_a_move_whose_every_name_is_taken_fails_and_replaces_nothing(tmp_path, monkeypatch):
    """The free names tried are bounded: when each is taken just before the move reaches it, the
    rename is reported failed, the file stays where it was in the cloud and nothing is replaced."""
    monkeypatch.setenv("HYCLOUD_DEVICE", "laptop")
    cloud = _cloud()
    cloud.files["/w/a"] = (b"mine", 5000.0)
    written = _other_device_writes_at(cloud, lambda dst: dst.startswith("/w/b"), times=1000)
    queue = OperationQueue(cloud, "pair", directory=tmp_path / "q")
    queue.submit(LocalOp("rename", OpKind.MOVE, "/w/a", dest="/w/b"))
    assert [f["path"] for f in queue.failed] == ["/w/a"] and queue.sent == []
    assert 1 < len(written) <= 10 and len(set(written)) == len(written)
    assert cloud.files["/w/a"][0] == b"mine"
    assert all(cloud.files[p][0] == f"another device's {p}".encode() for p in written)
