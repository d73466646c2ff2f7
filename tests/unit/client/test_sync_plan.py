"""Sync against an in-memory cloud: what is sent, kept, deleted and set aside, and in how many rounds."""

from __future__ import annotations

import time

import pytest

from hycloud.sync import SyncOptions, sync
from hycloud.sync.filters import PathFilter
from tests.unit.sync_fake_cloud import FakeCloud, FileByFile, write


@pytest.fixture(autouse=True)
def state_file(tmp_path, monkeypatch):
    monkeypatch.setattr("hycloud.sync.executor.bundles", FileByFile)
    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "state.sqlite3"))
    monkeypatch.setenv("HYCLOUD_DEVICE", "laptop")


def tree(root, files):
    for rel, data in files.items():
        write(root / rel, data)


def test_push_then_nothing_to_do_in_one_round(tmp_path):
    cloud, local = FakeCloud(), tmp_path / "a"
    tree(local, {"x.txt": b"x", "d/y.txt": b"y", "d/e/z.txt": b"z" * 2000})
    first = sync(cloud, local, "/p/q", "push")
    assert first["files"] == 3 and cloud.files["/p/q/d/e/z.txt"][0] == b"z" * 2000
    cloud.calls.clear()
    again = sync(cloud, local, "/p/q", "push")
    assert (again["files"], again["bytes"], again["rounds"]) == (0, 0, 1)
    assert cloud.calls == ["merkle diff"]
    write(local / "d/e/z.txt", b"edited")
    cloud.calls.clear()
    edited = sync(cloud, local, "/p/q", "push")
    # 3 levels below /p/q, one round: the cloud descends into the folders whose hashes differ
    assert edited["copied"] == ["d/e/z.txt"] and edited["rounds"] == 1
    assert cloud.calls[0] == "merkle diff" and "merkle" not in cloud.calls


def test_pull_edits_adds_deletes_and_a_rename(tmp_path):
    cloud, local = FakeCloud(), tmp_path / "b"
    for i in range(5):
        cloud.files[f"/r/f{i}.txt"] = (f"content {i}".encode(), 1000.0 + i)
    cloud.dirs.add("/r")
    assert sync(cloud, local, "/r", "pull")["files"] == 5
    cloud.files["/r/f0.txt"] = (b"edited", 2000.0)
    cloud.files["/r/new/g.txt"] = (b"new", 2000.0)
    cloud.dirs.add("/r/new")
    del cloud.files["/r/f1.txt"]
    cloud.files["/r/moved.txt"] = cloud.files.pop("/r/f2.txt")
    cloud.calls.clear()
    report = sync(cloud, local, "/r", "pull", SyncOptions(delete=True))
    # the folder only the cloud has came whole with the diff's answer: no listing of it after
    assert cloud.calls[0] == "merkle diff" and "merkle" not in cloud.calls
    assert sorted(report["copied"]) == ["f0.txt", "new/g.txt"]
    assert report["moved"] == [{"from": "f2.txt", "to": "moved.txt"}] and report["deleted"] == ["f1.txt"]
    names = sorted(p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file())
    assert names == ["f0.txt", "f3.txt", "f4.txt", "moved.txt", "new/g.txt"]
    assert (local / "f0.txt").read_bytes() == b"edited" and (local / "moved.txt").read_bytes() == b"content 2"


def test_a_first_pull_fetches_every_file_at_once_and_lists_no_folder(tmp_path, monkeypatch):
    """As `get -r`: no listing of each cloud folder before the transfer (the bundles carry each
    file's size, mtime and mode), small and large files in one get_files call; the next sync
    finds nothing to do and reads no file."""
    monkeypatch.setattr(FileByFile, "batches", [])
    cloud, local = FakeCloud(), tmp_path / "new"
    for i in range(30):
        cloud.files[f"/r/d{i % 3}/e{i % 2}/f{i}.txt"] = (b"x" * (i * 100), 1000.0 + i)  # some large
    cloud.dirs |= {
        "/r",
        *(f"/r/d{i}" for i in range(3)),
        *(f"/r/d{i}/e{j}" for i in range(3) for j in range(2)),
    }
    report = sync(cloud, local, "/r", "pull")
    assert report["files"] == 30 and not report["failed"] and FileByFile.batches == [30]
    assert not [c for c in cloud.calls if c.startswith("list ")]
    for path, (data, mtime) in cloud.files.items():
        assert (local / path[3:]).read_bytes() == data and (local / path[3:]).stat().st_mtime == mtime
    monkeypatch.setattr("hycloud.sync.scan.RACY_NS", 10_000_000)  # the files' ctimes: 10 ms, not 2 s
    time.sleep(0.03)
    again = sync(cloud, local, "/r", "pull")
    assert (again["files"], again["hashed"]) == (0, 0)  # the hashes the pull kept


def test_conflict_keeps_both_and_newer_wins(tmp_path):
    cloud, local = FakeCloud(), tmp_path / "c"
    tree(local, {"n.txt": b"v1"})
    sync(cloud, local, "/c", "push")
    write(local / "n.txt", b"local edit", mtime=5000.0)
    cloud.files["/c/n.txt"] = (b"cloud edit", 6000.0)  # newer
    report = sync(cloud, local, "/c", "push")
    assert report["conflicts"] == [
        {"path": "n.txt", "winner": "destination", "kept_as": "n.txt.conflict-laptop-19700101T012320Z"}
    ]
    assert cloud.files["/c/n.txt"][0] == b"cloud edit"
    assert cloud.files["/c/n.txt.conflict-laptop-19700101T012320Z"][0] == b"local edit"


def test_changes_only_at_destination_are_kept_and_deletes_need_the_flag(tmp_path):
    cloud, local = FakeCloud(), tmp_path / "k"
    tree(local, {"a.txt": b"a", "b.txt": b"b"})
    sync(cloud, local, "/k", "push")
    cloud.files["/k/a.txt"] = (b"changed in the cloud", 9.0)
    (local / "b.txt").unlink()
    report = sync(cloud, local, "/k", "push")
    assert report["kept"] == ["a.txt"] and report["not_deleted"] == ["b.txt"] and report["files"] == 0
    assert cloud.files["/k/a.txt"][0] == b"changed in the cloud" and "/k/b.txt" in cloud.files
    assert sync(cloud, local, "/k", "push", SyncOptions(delete=True))["deleted"] == ["b.txt"]
    assert "/k/b.txt" not in cloud.files


def test_dry_run_changes_nothing(tmp_path):
    cloud, local = FakeCloud(), tmp_path / "d"
    tree(local, {"a.txt": b"a"})
    report = sync(cloud, local, "/d", "push", SyncOptions(dry_run=True))
    assert report["copied"] == ["a.txt"] and report["files"] == 1 and cloud.files == {}


def test_exclude_and_include(tmp_path):
    cloud, local = FakeCloud(), tmp_path / "e"
    tree(local, {"a.log": b"1", "keep.log": b"2", "build/o": b"3", "src/a.c": b"4"})
    options = SyncOptions(exclude=("*.log", "build/"), include=("keep.log",))
    sync(cloud, local, "/e", "push", options)
    assert sorted(cloud.files) == ["/e/keep.log", "/e/src/a.c"]
    cloud.files["/e/b.log"] = (b"cloud only", 1.0)
    assert sync(cloud, local, "/e", "push", SyncOptions(delete=True, exclude=("*.log",)))["deleted"] == []


def test_filter_matches_folders_and_files():
    keep = PathFilter.of(["*.log", "build/"], ["keep.log"])
    assert [keep.keeps_file(p) for p in ("a/x.log", "a/keep.log", "build/x.c", "a.txt")] == [
        False,
        True,
        False,
        True,
    ]
    assert not keep.keeps_dir("src/build") and keep.keeps_dir("src")


def test_files_refused_as_busy_are_sent_again(tmp_path, monkeypatch):
    cloud, local, refused = FakeCloud(), tmp_path / "busy", []
    tree(local, {"a.txt": b"a", "b.txt": b"b"})
    monkeypatch.setattr("hycloud.sync.executor.BUSY_PAUSE", 0.0)

    class OnceBusy(FileByFile):
        @staticmethod
        def put_files(client, pairs, progress=None, expect=None):
            if not refused:
                refused.append(pairs[0][1])
                first = {"path": pairs[0][1], "status": "error", "error": "busy; retry", "code": "busy"}
                return [first, *FileByFile.put_files(client, pairs[1:], progress, expect)]
            return FileByFile.put_files(client, pairs, progress, expect)

    monkeypatch.setattr("hycloud.sync.executor.bundles", OnceBusy)
    report = sync(cloud, local, "/busy", "push")
    assert report["files"] == 2 and not report["failed"] and refused == ["/busy/a.txt"]
    assert sorted(cloud.files) == ["/busy/a.txt", "/busy/b.txt"]


def test_a_conflict_copy_never_takes_the_name_of_another_file(tmp_path):
    """Two cloud versions in one second give one stamp: the earlier conflict's copy, synced back
    up, must not overwrite the later conflict's kept version (nor be overwritten by it)."""
    cloud, local = FakeCloud(), tmp_path / "d"
    tree(local, {"n.txt": b"v1"})
    sync(cloud, local, "/d", "push")
    write(local / "n.txt", b"laptop, newer", mtime=7000.0)
    write(local / "n.txt.conflict-cloud-19700101T012320Z", b"an earlier conflict's copy", mtime=5000.0)
    cloud.files["/d/n.txt"] = (b"cloud, older", 5000.0)  # the same second as that copy's stamp
    report = sync(cloud, local, "/d", "push")
    [conflict] = report["conflicts"]
    assert conflict["winner"] == "source" and conflict["kept_as"] != "n.txt.conflict-cloud-19700101T012320Z"
    assert cloud.files["/d/" + conflict["kept_as"]][0] == b"cloud, older"
    assert cloud.files["/d/n.txt.conflict-cloud-19700101T012320Z"][0] == b"an earlier conflict's copy"
    assert cloud.files["/d/n.txt"][0] == b"laptop, newer"


@pytest.mark.parametrize("size", [10, 5000], ids=["small", "large"])
def test_a_version_written_elsewhere_during_the_push_is_never_overwritten(tmp_path, size):
    """Another device writes the file between this sync's exchange and its push: the push names
    the version it saw and is refused, and the next pass keeps both, the newer at the path."""
    cloud, local = FakeCloud(), tmp_path / "race"
    tree(local, {"a": b"0" * size, "b": b"b"})
    sync(cloud, local, "/r", "push")
    write(local / "a", b"mine".ljust(size, b"."), mtime=2000.0)
    theirs = b"theirs".ljust(size, b".")

    def other_device(path: str) -> None:
        if path == "/r/a" and cloud.before_write:
            cloud.before_write = None
            cloud.files["/r/a"] = (theirs, 3000.0)  # newer than ours

    cloud.before_write = other_device
    report = sync(cloud, local, "/r", "push")
    [conflict] = report["conflicts"]
    assert conflict["winner"] == "destination" and not report["failed"]
    assert cloud.files["/r/a"][0] == theirs
    assert cloud.files["/r/" + conflict["kept_as"]][0] == b"mine".ljust(size, b".")


def test_a_delete_of_a_file_changed_elsewhere_keeps_it(tmp_path):
    cloud, local = FakeCloud(), tmp_path / "gone"
    tree(local, {"a": b"0"})
    sync(cloud, local, "/g", "push")
    (local / "a").unlink()
    real_rm = cloud.rm

    def rm(path, expect=None):
        cloud.files[path] = (b"edited elsewhere", 3000.0)
        return real_rm(path, expect)

    cloud.rm = rm
    report = sync(cloud, local, "/g", "push", SyncOptions(delete=True))
    assert cloud.files["/g/a"][0] == b"edited elsewhere"
    assert report["failed"] == [] and report["kept"] == ["a"]


def test_a_dry_run_plans_a_rename_as_a_move_from_the_differing_paths_base_alone(tmp_path):
    cloud, local = FakeCloud(), tmp_path / "r"
    tree(local, {"a.txt": b"alpha", "keep.txt": b"kept"})
    sync(cloud, local, "/r", "push")
    (local / "a.txt").rename(local / "b.txt")
    report = sync(cloud, local, "/r", "push", SyncOptions(dry_run=True, delete=True))
    assert report["moved"] == [{"from": "a.txt", "to": "b.txt"}] and not report["copied"]
    assert sorted(cloud.files) == ["/r/a.txt", "/r/keep.txt"]  # a dry run changes nothing


@pytest.mark.parametrize("direction", ["push", "pull"])
def test_a_renamed_folder_is_planned_as_moves_hashing_each_deleted_content_once(direction, monkeypatch):
    """Every file of a renamed folder is a move (two with the same content included), found with
    one lookup per file: a pull's deleted contents are hashed once each, not once per new file."""
    from hycloud.sync import plan as plans
    from hycloud.sync.diff import Differences, RemoteFile, merkle_of
    from hycloud.sync.scan import LocalFile, LocalTree
    from hycloud.sync.state import BaseEntry
    from hycloud_core import content

    n = 300
    digests = [content.hash_bytes(f"{i % (n - 1)}".encode()) for i in range(n)]  # two alike
    old, new = [f"a/f{i}" for i in range(n)], [f"b/f{i}" for i in range(n)]
    base = {rel: BaseEntry(merkle_of(h), h, 1.0) for rel, h in zip(old, digests, strict=True)}
    mine, theirs = ({"b"}, {"a"}) if direction == "push" else ({"a"}, {"b"})
    diff = Differences(files=set(old) | set(new), local_dirs=mine, remote_dirs=theirs)
    local = LocalTree(dirs=mine)
    for rel, h in zip(new if direction == "push" else old, digests, strict=True):
        local.files[rel] = LocalFile(1, 1.0, h, 0o644)
    for rel, h in zip(old if direction == "push" else new, digests, strict=True):
        diff.remote[rel] = RemoteFile(merkle_of(h), 1.0)
    hashed: list[str] = []
    real = plans.merkle_of
    monkeypatch.setattr(plans, "merkle_of", lambda h: hashed.append(h) or real(h))
    plan = plans.make_plan(direction, "/r", diff, local, base, False, True, "laptop")
    digest = dict(zip(old + new, digests + digests, strict=True))
    assert sorted(a for a, _ in plan.moves) == sorted(old) and sorted(b for _, b in plan.moves) == sorted(new)
    assert all(digest[a] == digest[b] for a, b in plan.moves)
    assert not plan.copies and not plan.deletes
    assert len(hashed) <= 2 * n  # linear: each deleted content once here, each file once elsewhere


def test_a_file_other_devices_keep_writing_during_the_sync_still_goes_up(tmp_path, monkeypatch):
    """Three other devices each write the file just before one of this sync's pushes (four devices
    syncing one file at once): every pass meets a new version, and the sync passes again, after a
    pause, until its push goes through; every version is kept."""
    monkeypatch.setattr("hycloud.sync.run.RACE_PAUSE", 0.0)
    cloud, local = FakeCloud(), tmp_path / "busy"
    tree(local, {"a": b"0"})
    sync(cloud, local, "/r", "push")
    write(local / "a", b"mine", mtime=2000.0)
    others = [b"dev1", b"dev2", b"dev3"]

    def other_device(path: str) -> None:
        if path == "/r/a" and others:
            cloud.files["/r/a"] = (others.pop(0), 1500.0)  # older than ours: ours wins each time

    cloud.before_write = other_device
    report = sync(cloud, local, "/r", "push")
    assert report["failed"] == [] and not others
    assert cloud.files["/r/a"][0] == b"mine"
    kept = {data for p, (data, _) in cloud.files.items() if p.startswith("/r/a.conflict-")}
    assert kept == {b"dev1", b"dev2", b"dev3"}


def test_a_move_never_replaces_what_another_device_just_wrote_at_its_destination(tmp_path, monkeypatch):
    """Setting the cloud's version aside (local won a conflict) moves it to a name the exchange
    saw free; another device's conflict copy of the same second can take that name meanwhile. The
    move names the destination as absent, so it is refused and the next pass picks another name:
    every version stays in the tree (a move onto a file replaces it, keeping it only in history)."""
    monkeypatch.setattr("hycloud.sync.run.RACE_PAUSE", 0.0)
    cloud, local = FakeCloud(), tmp_path / "mv"
    tree(local, {"a": b"base"})
    sync(cloud, local, "/r", "push")
    write(local / "a", b"mine", mtime=6000.0)
    cloud.files["/r/a"] = (b"theirs", 5000.0)  # older: mine wins, theirs is set aside

    def other_device(src: str, dst: str) -> None:
        if ".conflict-" in dst and cloud.before_move:
            cloud.before_move = None
            cloud.files[dst] = (b"another device's copy", 5000.0)

    cloud.before_move = other_device
    report = sync(cloud, local, "/r", "push")
    assert report["failed"] == []
    kept = sorted(data for p, (data, _) in cloud.files.items() if p.startswith("/r/a"))
    assert kept == sorted([b"mine", b"theirs", b"another device's copy"])
