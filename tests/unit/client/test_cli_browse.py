"""`ls -R`, `ls FILE`, `cat`, `head`, `get FILE -`, `du`, `tree`, `find` and `touch`, run in-process
against an in-memory cloud: what they print, their --json and exit codes."""

from __future__ import annotations

import json
import time

import pytest

from hycloud.cli import exit_codes
from hycloud_core import content
from tests.unit.client.cli_fake import cloud, run  # noqa: F401  (cloud is a fixture)


@pytest.fixture
def tree_cloud(cloud):  # noqa: F811
    cloud.add("/p/a.txt", b"alpha\n")
    cloud.add("/p/b/c.txt", b"c" * 2000, mode=0o600)  # large for the fake (threshold 1024)
    cloud.add("/p/b/d/e.py", b"print(1)\n")
    cloud.mkdir("/p/empty")
    return cloud


def out_of(capsys) -> str:
    return capsys.readouterr().out


def test_ls_of_a_file_shows_the_file_as_ls_does(tree_cloud, capsys):
    assert run("ls", "/p/a.txt") == 0
    assert out_of(capsys) == "/p/a.txt\n"
    assert run("ls", "-l", "/p/b/c.txt") == 0
    assert out_of(capsys).split()[:2] == ["file", "2000"]
    assert run("--json", "ls", "/p/a.txt") == 0
    assert json.loads(out_of(capsys))["path"] == "/p/a.txt"


def test_ls_R_lists_every_folder_below_with_a_heading_each(tree_cloud, capsys):
    assert run("ls", "-R", "/p") == 0
    assert out_of(capsys) == ("/p:\na.txt\nb/\nempty/\n\n/p/b:\nc.txt\nd/\n\n/p/b/d:\ne.py\n\n/p/empty:\n")
    assert run("--json", "ls", "-R", "/p") == 0
    listing = json.loads(out_of(capsys))
    assert sorted(listing) == ["/p", "/p/b", "/p/b/d", "/p/empty"]
    assert [e["name"] for e in listing["/p/b/d"]] == ["e.py"]


def test_ls_of_a_missing_path_exits_not_found(tree_cloud, capsys):
    assert run("ls", "/nope") == exit_codes.NOT_FOUND


def test_cat_writes_the_bytes_of_each_file_to_stdout(tree_cloud, capsysbinary):
    assert run("cat", "/p/a.txt", "/p/b/d/e.py") == 0
    assert capsysbinary.readouterr().out == b"alpha\nprint(1)\n"


def test_cat_of_a_folder_is_an_error_and_writes_nothing(tree_cloud, capsysbinary):
    assert run("cat", "/p/b") == exit_codes.CONFLICT
    assert capsysbinary.readouterr().out == b""


def test_get_to_dash_writes_to_stdout_not_a_file_named_dash(tree_cloud, capsysbinary, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run("get", "/p/b/c.txt", "-") == 0
    assert capsysbinary.readouterr().out == b"c" * 2000
    assert not (tmp_path / "-").exists()


def test_head_lines_and_bytes(cloud, capsysbinary):  # noqa: F811
    cloud.add("/log", b"".join(b"line %d\n" % i for i in range(100)))
    assert run("head", "/log") == 0
    assert capsysbinary.readouterr().out == b"".join(b"line %d\n" % i for i in range(10))
    assert run("head", "-n", "2", "/log") == 0
    assert capsysbinary.readouterr().out == b"line 0\nline 1\n"
    assert run("head", "-c", "9", "/log") == 0
    assert capsysbinary.readouterr().out == b"line 0\nli"
    assert run("head", "-n", "-1", "/log") == exit_codes.USAGE


def test_du_totals_every_folder_deepest_first_and_s_only_the_total(tree_cloud, capsys):
    assert run("du", "/p") == 0
    assert out_of(capsys).splitlines() == ["9\t/p/b/d", "2009\t/p/b", "0\t/p/empty", "2015\t/p"]
    assert run("du", "-sh", "/p") == 0
    assert out_of(capsys) == "2.0K\t/p\n"
    assert run("du", "-d", "1", "/p") == 0
    assert out_of(capsys).splitlines() == ["2009\t/p/b", "0\t/p/empty", "2015\t/p"]
    assert run("--json", "du", "-s", "/p") == 0
    assert json.loads(out_of(capsys)) == [{"path": "/p", "bytes": 2015, "files": 3}]
    assert run("du", "/p/a.txt") == 0
    assert out_of(capsys) == "6\t/p/a.txt\n"


def test_tree_draws_the_folder_and_counts(tree_cloud, capsys):
    assert run("tree", "/p") == 0
    assert out_of(capsys) == (
        "/p\n"
        "├── a.txt\n"
        "├── b/\n"
        "│   ├── c.txt\n"
        "│   └── d/\n"
        "│       └── e.py\n"
        "└── empty/\n"
        "\n3 directories, 3 files\n"
    )
    assert run("tree", "-L", "1", "-s", "/p") == 0
    assert out_of(capsys).splitlines()[1:4] == ["├── [6]  a.txt", "├── b/", "└── empty/"]
    assert "list /p/b" not in tree_cloud.calls[-3:]  # -L 1 lists only the top
    assert run("--json", "tree", "/p") == 0
    shown = json.loads(out_of(capsys))
    assert (shown["folders"], shown["files"]) == (3, 3)
    assert shown["tree"][1]["contents"][1]["contents"][0]["name"] == "e.py"


def test_find_by_name_type_depth_and_age(tree_cloud, capsys):
    assert run("find", "/p") == 0
    assert out_of(capsys).splitlines() == [
        "/p",
        "/p/a.txt",
        "/p/b",
        "/p/empty",
        "/p/b/c.txt",
        "/p/b/d",
        "/p/b/d/e.py",
    ]
    assert run("find", "/p", "--name", "*.py") == 0
    assert out_of(capsys) == "/p/b/d/e.py\n"
    assert run("find", "/p", "--type", "d") == 0
    assert out_of(capsys).splitlines() == ["/p", "/p/b", "/p/empty", "/p/b/d"]
    assert run("find", "/p", "--type", "f", "--maxdepth", "1") == 0
    assert out_of(capsys) == "/p/a.txt\n"
    tree_cloud.add("/p/new.txt", b"n", mtime=time.time())
    assert run("find", "/p", "--type", "f", "--mmin", "5") == 0
    assert out_of(capsys) == "/p/new.txt\n"
    assert run("find", "/p", "--type", "x") == exit_codes.USAGE


def test_touch_creates_an_empty_file_and_refreshes_a_small_files_time(cloud, capsys):  # noqa: F811
    cloud.mkdir("/d")
    assert run("touch", "/d/new") == 0
    assert cloud.files["/d/new"]["data"] == b""
    assert run("touch", "/missing/x") == exit_codes.NOT_FOUND
    assert run("touch", "-p", "/missing/x") == 0 and "/missing/x" in cloud.files
    cloud.add("/d/old", b"kept", mtime=1_000_000_000.0, mode=0o755)
    assert run("touch", "/d/old") == 0
    old = cloud.files["/d/old"]
    assert old["data"] == b"kept" and old["mode"] == 0o755 and old["mtime"] > time.time() - 60
    assert run("touch", "-c", "/d/absent") == 0 and "/d/absent" not in cloud.files
    cloud.add("/d/big", b"x" * 5000)
    assert run("touch", "/d/big") == exit_codes.USAGE  # a large file's time is kept as uploaded
    assert content.hash_bytes(cloud.files["/d/big"]["data"]) == content.hash_bytes(b"x" * 5000)


@pytest.mark.parametrize("command", ["ls", "cat", "head", "du", "tree", "find", "touch", "check", "hash"])
def test_help_has_examples_and_flags_show_no_value(command, capsys):
    assert run(command, "--help") == 0
    text = capsys.readouterr().out
    assert "Examples:" in text and f"hycloud {command}" in text.split("Examples:")[1]
    assert "<bool>" not in text and " / --no-" not in text  # no typer on/off pairs
