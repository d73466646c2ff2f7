"""`hycloud://` over an in-memory cloud: the exceptions Python expects, writes into missing
folders, and the kept folder listings (used by `info`, updated by the filesystem's own changes,
never serving a path it removed). The deployed cloud runs fsspec's abstract suite
(tests/e2e/test_fsspec_abstract.py)."""

from __future__ import annotations

import os

import pytest

from hycloud import fsspec_fs
from hycloud.fsspec_fs import HyCloudFileSystem
from tests.unit.client.cli_fake import FakeHyCloud


@pytest.fixture
def cloud() -> FakeHyCloud:
    return FakeHyCloud()


@pytest.fixture
def fs(cloud, monkeypatch) -> HyCloudFileSystem:
    monkeypatch.setattr(fsspec_fs, "make_client", lambda *a, **k: cloud)
    return HyCloudFileSystem(skip_instance_cache=True)


def requests_during(cloud: FakeHyCloud, action) -> list[str]:
    before = len(cloud.calls)
    action()
    return cloud.calls[before:]


def test_missing_paths_and_existing_ones_raise_what_python_expects(fs, cloud):
    cloud.add("/d/f.txt", b"x")
    with pytest.raises(FileNotFoundError):
        fs.info("/nope")
    with pytest.raises(FileNotFoundError):
        fs.cat_file("/d/nope")
    with pytest.raises(FileNotFoundError):
        fs.cp_file("/d/nope", "/d/x")
    with pytest.raises(IsADirectoryError):
        fs.cat_file("/d")
    with pytest.raises(FileExistsError):
        fs.mkdir("/d")
    with pytest.raises(FileExistsError):
        fs.makedirs("/d/f.txt", exist_ok=True)  # a file is in the way
    with pytest.raises(FileExistsError):
        fs.open("/d/f.txt", "xb")
    with pytest.raises(FileExistsError):
        fs.pipe_file("/d/f.txt", b"y", mode="create")
    with pytest.raises(NotADirectoryError):
        fs.rmdir("/d/f.txt")
    with pytest.raises(OSError) as err:
        fs.rmdir("/d")
    assert err.value.errno == 39 and err.value.code == "not-empty"  # ENOTEMPTY, the cloud's code kept
    assert cloud.files["/d/f.txt"]["data"] == b"x"


def test_writes_make_missing_folders_unless_auto_mkdir_is_off(fs, cloud, tmp_path, monkeypatch):
    with fs.open("/new/deep/a.csv", "w") as f:
        f.write("a,b\n")
    fs.cp_file("/new/deep/a.csv", "/other/place/b.csv")
    local = tmp_path / "l.txt"
    local.write_bytes(b"l")
    os.utime(local, (1_577_836_800, 1_577_836_800))
    local.chmod(0o751)
    fs.put_file(str(local), "/up/here/l.txt")
    assert cloud.files["/new/deep/a.csv"]["data"] == b"a,b\n" and "/other/place/b.csv" in cloud.files
    assert (cloud.files["/up/here/l.txt"]["mtime"], cloud.files["/up/here/l.txt"]["mode"]) == (
        1_577_836_800,
        0o751,
    )
    fs.get_file("/new/deep/a.csv", str(tmp_path / "made" / "here" / "a.csv"))
    assert (tmp_path / "made" / "here" / "a.csv").read_bytes() == b"a,b\n"
    strict = HyCloudFileSystem(skip_instance_cache=True, auto_mkdir=False)
    with pytest.raises(FileNotFoundError):
        strict.open("/absent/x.txt", "wb")


def test_an_exclusive_create_commits_only_where_nothing_is(fs, cloud):
    f = fs.open("/x.bin", "xb")
    f.write(b"mine")
    cloud.add("/x.bin", b"someone else's")  # made meanwhile
    with pytest.raises(FileExistsError):
        f.close()
    assert cloud.files["/x.bin"]["data"] == b"someone else's"


def test_listings_answer_info_and_follow_the_filesystems_own_changes(fs, cloud):
    cloud.add("/d/a.txt", b"a")
    cloud.add("/d/sub/b.txt", b"b")
    fs.ls("/d")
    assert (
        requests_during(cloud, lambda: (fs.isfile("/d/a.txt"), fs.isdir("/d/sub"), fs.exists("/d/no"))) == []
    )
    fs.pipe_file("/d/c.txt", b"c")
    fs.rm_file("/d/a.txt")
    fs.mv("/d/sub", "/d/moved")
    calls = requests_during(
        cloud, lambda: [fs.exists(p) for p in ("/d/c.txt", "/d/a.txt", "/d/sub", "/d/moved")]
    )
    assert calls == []
    assert [fs.exists(p) for p in ("/d/c.txt", "/d/a.txt", "/d/sub", "/d/moved")] == [
        True,
        False,
        False,
        True,
    ]
    assert fs.ls("/d", detail=False) == ["/d/c.txt", "/d/moved"]
    assert fs.cat_file("/d/moved/b.txt") == b"b"


def test_a_change_that_fails_forgets_what_it_touched(fs, cloud):
    cloud.add("/d/a.txt", b"a")
    fs.ls("/d")
    cloud.add("/d/late.txt", b"another client")
    with pytest.raises(FileExistsError):
        fs.pipe_file("/d/late.txt", b"mine", mode="create")
    assert fs.exists("/d/late.txt") and "stat /d/late.txt" in cloud.calls[-1:]


def test_rm_recursive_removes_a_folder_in_one_call_and_files_too(fs, cloud):
    cloud.add("/t/a/b.txt", b"b")
    cloud.add("/t/c.txt", b"c")
    fs.ls("/t")
    assert requests_during(cloud, lambda: fs.rm(["/t/a", "/t/c.txt"], recursive=True)) == [
        "rmdir /t/a",
        "rmdir /t/c.txt",
        "rm /t/c.txt",
    ]
    assert fs.ls("/t") == [] and not fs.exists("/t/a/b.txt")
    with pytest.raises(FileNotFoundError):
        fs.rm("/t/none")
