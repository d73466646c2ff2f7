"""The unmount watcher reads the mount table (mountinfo escapes included) and acts once the
mount it saw is gone."""

from __future__ import annotations

import threading
from pathlib import Path

from hycloud.mount import watch

LINE = "64 44 0:39 / {} rw,nosuid,nodev,relatime - fuse hycloud rw,user_id=0,group_id=0\n"


def test_mounted_here_reads_escaped_mount_points(tmp_path):
    table = tmp_path / "mountinfo"
    table.write_text(LINE.format("/tmp/my\\040files/mnt") + LINE.format("/home/a"))
    assert watch.mounted_here("/tmp/my files/mnt", str(table))
    assert watch.mounted_here("/home/a", str(table))
    assert not watch.mounted_here("/tmp/my", str(table))
    assert watch.mounted_here("/x", str(tmp_path / "no-such-table"))  # unknown: never end on a guess


def test_the_watcher_acts_once_the_mount_it_saw_is_gone(tmp_path, monkeypatch):
    table = tmp_path / "mountinfo"
    table.write_text(LINE.format("/elsewhere"))
    monkeypatch.setattr(watch, "MOUNTINFO", str(table))
    monkeypatch.setattr(watch.mounted_here, "__defaults__", (str(table),))
    ended, mounted = threading.Event(), threading.Event()
    thread = watch.watch(str(tmp_path / "mnt"), ended.set, mounted, poll=0.01)
    assert not ended.wait(0.1)  # not mounted yet: a mount that has not appeared is not gone
    table.write_text(LINE.format(Path(tmp_path / "mnt").resolve()))
    mounted.set()  # libfuse's INIT
    assert not ended.wait(0.1)
    table.write_text(LINE.format("/elsewhere"))
    assert ended.wait(2)
    thread.join(2)
    assert not thread.is_alive()
