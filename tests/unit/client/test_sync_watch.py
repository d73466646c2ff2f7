"""`sync --watch` sends a change as soon as it is made: the first event wakes the loop (a burst
settles for SETTLE), not the next fixed tick."""

from __future__ import annotations

import threading
import time

from hycloud.sync.filters import PathFilter
from hycloud.sync.watch import watch
from tests.unit.sync_fake_cloud import FakeCloud


def test_a_change_is_sent_within_the_settle_time_not_the_tick(tmp_path, monkeypatch):
    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "state.sqlite3"))
    monkeypatch.setattr("hycloud.sync.watch.TICK", 20.0)  # a fixed tick: sent 20 s later, or at the end
    cloud, local = FakeCloud(), tmp_path / "w"
    cloud.store.rate = staticmethod(lambda kind: None)  # type: ignore[attr-defined]
    local.mkdir()
    cloud.dirs.add("/w")
    ready = threading.Event()
    watcher = threading.Thread(
        target=watch,
        args=(cloud, local, "/w", PathFilter.of(), 4.0),
        kwargs={"ready": ready.set},
        daemon=True,
    )
    watcher.start()
    assert ready.wait(10)
    time.sleep(0.3)  # the observer is scheduled before ready; let it settle on a loaded machine
    made = time.monotonic()
    (local / "note.txt").write_bytes(b"written now")
    while "/w/note.txt" not in cloud.files and time.monotonic() - made < 15:
        time.sleep(0.01)
    took = time.monotonic() - made
    assert cloud.files["/w/note.txt"][0] == b"written now"
    assert took < 2.0, f"sent {took:.2f} s after the change"  # the watch itself ends 4 s after it began
    watcher.join(10)
