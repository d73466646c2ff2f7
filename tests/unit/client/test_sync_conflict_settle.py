"""A conflict settles on both sides: the winner at the path and the loser beside it, locally and
in the cloud, so the next sync has nothing to say (it used to report the loser's copy as gone
from the source at every run, and --delete then refused it)."""

from __future__ import annotations

import pytest

from hycloud.sync import SyncOptions, sync
from tests.unit.sync_fake_cloud import FakeCloud, FileByFile, write


@pytest.fixture(autouse=True)
def state_file(tmp_path, monkeypatch):
    monkeypatch.setattr("hycloud.sync.executor.bundles", FileByFile)
    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "state.sqlite3"))
    monkeypatch.setenv("HYCLOUD_DEVICE", "laptop")


def local_files(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def cloud_files(cloud: FakeCloud, root: str) -> dict[str, bytes]:
    return {p[len(root) + 1 :]: data for p, (data, _) in cloud.files.items() if p.startswith(root + "/")}


def quiet(report: dict) -> bool:
    said = ("copied", "moved", "deleted", "conflicts", "kept", "not_deleted", "failed", "clashes")
    return report["files"] == 0 and not any(report[k] for k in said)


@pytest.mark.parametrize(
    ("direction", "local_mtime", "cloud_mtime", "winner"),
    [
        ("push", 7000.0, 6000.0, "source"),
        ("push", 5000.0, 6000.0, "destination"),
        ("pull", 5000.0, 6000.0, "source"),
        ("pull", 7000.0, 6000.0, "destination"),
    ],
)
def test_after_a_conflict_both_sides_agree_and_the_next_sync_has_nothing_to_say(
    tmp_path, direction, local_mtime, cloud_mtime, winner
):
    cloud, local = FakeCloud(), tmp_path / "l"
    write(local / "d" / "n.txt", b"v1")
    sync(cloud, local, "/s", "push")
    write(local / "d" / "n.txt", b"local edit", mtime=local_mtime)
    cloud.files["/s/d/n.txt"] = (b"cloud edit", cloud_mtime)
    src, dst = (f"{local}", "hc") if direction == "push" else ("hc", f"{local}")
    report = sync(cloud, local, "/s", direction)
    [conflict] = report["conflicts"]
    assert conflict["winner"] == winner and not report["failed"], report
    newer, older = (
        (b"local edit", b"cloud edit") if local_mtime > cloud_mtime else (b"cloud edit", b"local edit")
    )
    expected = {"d/n.txt": newer, conflict["kept_as"]: older}
    assert local_files(local) == expected, (src, dst)
    assert cloud_files(cloud, "/s") == expected
    for again in (
        sync(cloud, local, "/s", direction),
        sync(cloud, local, "/s", direction, SyncOptions(delete=True)),
    ):
        assert quiet(again), again
    other = "pull" if direction == "push" else "push"
    assert quiet(sync(cloud, local, "/s", other))
    assert local_files(local) == expected and cloud_files(cloud, "/s") == expected


def test_a_resolved_conflict_copy_deleted_at_the_source_goes_with_delete(tmp_path):
    cloud, local = FakeCloud(), tmp_path / "l"
    write(local / "n.txt", b"v1")
    sync(cloud, local, "/s", "push")
    write(local / "n.txt", b"local edit", mtime=7000.0)
    cloud.files["/s/n.txt"] = (b"cloud edit", 6000.0)
    [conflict] = sync(cloud, local, "/s", "push")["conflicts"]
    (local / conflict["kept_as"]).unlink()  # looked at it, no longer wanted
    told = sync(cloud, local, "/s", "push")
    assert told["not_deleted"] == [conflict["kept_as"]]
    assert sync(cloud, local, "/s", "push", SyncOptions(delete=True))["deleted"] == [conflict["kept_as"]]
    assert cloud_files(cloud, "/s") == {"n.txt": b"local edit"}
