"""`hycloud://` over an in-memory cloud: the exceptions Python expects, writes into missing
folders, and the kept folder listings (used by `info`, updated by the filesystem's own changes,
never serving a path it removed). fsspec's abstract suite runs against the controller itself
(test_fsspec_abstract.py); tests/e2e/test_fsspec.py against the deployed cloud."""

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


# --- request counts: operations, whole-tree copies, bundles ----------------------------------------
class TreeCloud(FakeHyCloud):
    """The fake with the cloud's folder copy (one call for a whole tree) and mkdir calls recorded."""

    def mkdir(self, path: str, parents: bool = False, exist_ok: bool = True) -> dict:
        self.calls.append(f"mkdir {path}")
        return super().mkdir(path, parents, exist_ok)

    def cp(self, src: str, dst: str, progress=None) -> dict:
        if src not in self.dirs:
            return super().cp(src, dst, progress)
        self.calls.append(f"cp {src} {dst}")
        if dst in self.dirs or dst in self.files:
            raise fsspec_fs.ConflictError(f"{dst} already exists", code="already-exists")
        self._require_parent(dst, False)
        for p in sorted(p for p in [*self.dirs, *self.files] if p == src or p.startswith(src + "/")):
            if p in self.dirs:
                self.dirs[dst + p[len(src) :]] = 0.0
            else:
                self.files[dst + p[len(src) :]] = dict(self.files[p])
        return self._entry(dst)


@pytest.fixture
def tree_cloud(monkeypatch) -> TreeCloud:
    from tests.unit.client.cli_fake import fake_get_files, fake_put_files

    cloud = TreeCloud()
    monkeypatch.setattr(fsspec_fs, "make_client", lambda *a, **k: cloud)
    monkeypatch.setattr(
        fsspec_fs.bundles, "put_files", lambda client, *a, **k: fake_put_files(cloud, *a, **k)
    )
    monkeypatch.setattr(
        fsspec_fs.bundles, "get_files", lambda client, *a, **k: fake_get_files(cloud, *a, **k)
    )
    for path in ("/src/a.txt", "/src/sub/b.txt", "/src/sub/deep/c.txt"):
        cloud.add(path, path.encode())
    return cloud


def test_a_folder_copied_where_nothing_is_goes_in_one_cloud_copy(tree_cloud):
    fs = HyCloudFileSystem(skip_instance_cache=True)
    fs.mkdir("/t")
    calls = requests_during(tree_cloud, lambda: fs.copy("/src/sub", "/t/new", recursive=True))
    assert [c for c in calls if c.startswith(("cp", "put", "mkdir"))] == ["cp /src/sub /t/new"]
    assert tree_cloud.files["/t/new/deep/c.txt"]["data"] == b"/src/sub/deep/c.txt"
    fs.copy("/src/sub", "/t", recursive=True)  # into a folder that is there: /t/sub
    assert tree_cloud.files["/t/sub/b.txt"]["data"] == b"/src/sub/b.txt"
    # contents merged into a folder that is there: fsspec's way, file by file
    calls = requests_during(tree_cloud, lambda: fs.copy("/src/", "/t/new", recursive=True))
    assert "cp /src/a.txt /t/new/a.txt" in calls and "cp /src /t/new" not in calls
    assert sorted(p for p in tree_cloud.files if p.startswith("/t/new/")) == [
        "/t/new/a.txt",
        "/t/new/b.txt",
        "/t/new/deep/c.txt",
        "/t/new/sub/b.txt",
        "/t/new/sub/deep/c.txt",
    ]


def test_an_operation_asks_about_each_path_once_however_old_its_listings(tree_cloud):
    """Listings kept expire at once here; within one copy they still answer to its end."""
    fs = HyCloudFileSystem(skip_instance_cache=True, listings_expiry_time=1e-9)
    fs.copy("/src/*", "/t/", recursive=True)
    asked = [c for c in tree_cloud.calls if c.startswith(("stat", "list"))]
    assert len(asked) == len(set(asked)), asked
    assert not [c for c in asked if c.startswith("stat /src/")], asked  # the listings answered
    assert {p for p in tree_cloud.files if p.startswith("/t/")} == {
        "/t/a.txt",
        "/t/sub/b.txt",
        "/t/sub/deep/c.txt",
    }
    fs.pipe_file("/src/new.txt", b"n")  # after the operation, and a change: asked again
    assert fs.exists("/src/new.txt") and fs.exists("/src/a.txt")


def test_a_stat_remembered_in_an_operation_is_forgotten_on_a_change(tree_cloud):
    fs = HyCloudFileSystem(skip_instance_cache=True)
    with fs._operation():
        assert not fs.exists("/src/x.txt")
        assert requests_during(tree_cloud, lambda: fs.exists("/src/x.txt")) == []
        tree_cloud.add("/src/x.txt", b"by another client")
        assert not fs.exists("/src/x.txt")  # still what the operation saw
        fs.pipe_file("/src/y.txt", b"y")
        assert fs.exists("/src/x.txt")  # a change: asked again
    assert fs._stats == {}


def test_a_write_keeps_listings_above_a_folder_that_was_there(tree_cloud):
    fs = HyCloudFileSystem(skip_instance_cache=True)
    fs.ls("/")
    fs.ls("/src")
    fs.pipe_file("/src/sub/x.txt", b"x")  # /src/sub's listing is not kept, /src lists /src/sub
    assert "/" in fs.dircache and "/src" in fs.dircache
    assert requests_during(tree_cloud, lambda: fs.isdir("/src/sub")) == []
    fs.ls("/src")
    fs.pipe_file("/src/new/deep/y.txt", b"y")  # /src/new was not there: /src's listing goes too
    assert "/src" not in fs.dircache and "/" in fs.dircache
    assert fs.ls("/src", detail=False) == ["/src/a.txt", "/src/new", "/src/sub"]
    with pytest.raises(FileNotFoundError):
        fs.info("/src/none")


def test_a_copy_into_a_folder_known_missing_makes_it_first_and_knows_it(tree_cloud):
    fs = HyCloudFileSystem(skip_instance_cache=True)
    fs.mkdir("/t")
    calls = requests_during(tree_cloud, lambda: fs.cp_file("/src/a.txt", "/t/new/a.txt"))
    assert calls == ["stat /src/a.txt", "mkdir /t/new", "cp /src/a.txt /t/new/a.txt"]
    assert requests_during(tree_cloud, lambda: (fs.isdir("/t/new"), fs.isfile("/t/new/a.txt"))) == []
    assert fs.isdir("/t/new") and fs.isfile("/t/new/a.txt") and not fs.exists("/t/new/b.txt")
    assert fs.ls("/t/new", detail=False, refresh=True) == ["/t/new/a.txt"]


def test_put_and_get_of_a_tree_go_in_bundles(tree_cloud, tmp_path):
    fs = HyCloudFileSystem(skip_instance_cache=True)
    local = tmp_path / "up"
    (local / "sub").mkdir(parents=True)
    (local / "empty").mkdir()
    for name in ("one.txt", "sub/two.txt"):
        (local / name).write_bytes(name.encode())
    calls = requests_during(tree_cloud, lambda: fs.put(str(local), "/up", recursive=True))
    # the folder no file makes, then one bundle (the fake stores its files one by one)
    assert [c for c in calls if not c.startswith(("stat", "list"))] == [
        "mkdir /up/empty",
        "put_files 2 parallel=None",
        "put /up/one.txt",
        "put /up/sub/two.txt",
    ]
    assert tree_cloud.files["/up/sub/two.txt"]["data"] == b"sub/two.txt" and "/up/empty" in tree_cloud.dirs
    calls = requests_during(tree_cloud, lambda: fs.get("/up", str(tmp_path / "down"), recursive=True))
    assert [c for c in calls if not c.startswith(("stat", "list"))] == [
        "get_files 2 parallel=None",
        "get /up/one.txt",
        "get /up/sub/two.txt",
    ]
    assert (tmp_path / "down" / "sub" / "two.txt").read_bytes() == b"sub/two.txt"
    assert (tmp_path / "down" / "empty").is_dir()
    fs.get("/up/one.txt", str(tmp_path / "single.txt"))  # one file: the usual download
    assert (tmp_path / "single.txt").read_bytes() == b"one.txt"
