"""Tree transfers from the command line, in-process against an in-memory cloud: a bad name is
named and the rest still goes (exit 12, a summary), --exclude/--include, --dry-run and
--transfers on put/get/cp, and a single `put` keeping mtime and mode as `put -r` does."""

from __future__ import annotations

import json
import os

import pytest

from hycloud.cli import exit_codes
from tests.unit.client.cli_fake import cloud, run  # noqa: F401  (cloud is a fixture)


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_bytes(b"a")
    (root / "sub" / "b.txt").write_bytes(b"bb")
    (root / "sub" / "skip.log").write_bytes(b"log")
    (root / "keep.log").write_bytes(b"kept")
    return root


def test_bad_names_are_named_the_rest_goes_and_the_exit_code_says_partial(cloud, tree, capsys):  # noqa: F811
    (tree / "back\\slash.txt").write_bytes(b"x")
    (tree / "new\nline.txt").write_bytes(b"y")
    code = run("put", "-r", str(tree), "/dst")
    out, err = capsys.readouterr()
    assert code == exit_codes.PARTIAL
    assert f"refused {tree}/back\\slash.txt: path contains a backslash" in err.splitlines()
    assert f"refused {tree}/new\\nline.txt: path contains control characters" in err.splitlines()
    assert sorted(p for p in cloud.files) == [
        "/dst/a.txt",
        "/dst/keep.log",
        "/dst/sub/b.txt",
        "/dst/sub/skip.log",
    ]
    assert out.strip() == f"uploaded 4 files (10 bytes) from {tree} to /dst; 2 refused (bad names)"


def test_tree_json_has_one_entry_per_file_with_its_status(cloud, tree, capsys):  # noqa: F811
    (tree / "bad\x01name").write_bytes(b"z")
    cloud.fail["/dst/sub/b.txt"] = "lost on the way"
    assert run("--json", "put", "-r", str(tree), "/dst") == exit_codes.PARTIAL
    entries = json.loads(capsys.readouterr().out)
    by_status = {
        s: sorted(e.get("path") or e["local"] for e in entries if e["status"] == s)
        for s in ("ok", "refused", "failed")
    }
    assert by_status == {
        "ok": ["/dst/a.txt", "/dst/keep.log", "/dst/sub/skip.log"],
        "refused": [str(tree / "bad\x01name")],
        "failed": ["/dst/sub/b.txt"],
    }


def test_a_tree_where_nothing_could_be_sent_exits_by_the_reason(cloud, tmp_path, capsys):  # noqa: F811
    only = tmp_path / "only"
    only.mkdir()
    (only / "a\\b").write_bytes(b"x")
    assert run("put", "-r", str(only), "/dst") == exit_codes.USAGE
    assert "refused" in capsys.readouterr().err


def test_a_folder_with_a_bad_name_is_refused_with_each_file_in_it(cloud, tree, capsys):  # noqa: F811
    (tree / "bad\\dir").mkdir()
    (tree / "bad\\dir" / "in.txt").write_bytes(b"i")
    assert run("put", "-r", str(tree), "/dst") == exit_codes.PARTIAL
    err = capsys.readouterr().err.splitlines()
    assert f"refused {tree}/bad\\dir: path contains a backslash" in err
    assert f"refused {tree}/bad\\dir/in.txt: path contains a backslash" in err


def test_put_r_exclude_include_dry_run_and_transfers(cloud, tree, capsys):  # noqa: F811
    assert run("put", "-r", "-n", str(tree), "/dst", "--exclude", "*.log", "--include", "keep.log") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == [
        f"would upload {tree}/a.txt -> /dst/a.txt",
        f"would upload {tree}/keep.log -> /dst/keep.log",
        f"would upload {tree}/sub/b.txt -> /dst/sub/b.txt",
    ]
    assert out[3] == f"would upload 3 files (7 bytes) from {tree} to /dst"
    assert cloud.files == {} and not any(c.startswith("put_files") for c in cloud.calls)
    assert run("put", "-r", str(tree), "/dst", "--exclude", "sub/", "--transfers", "7") == 0
    assert sorted(cloud.files) == ["/dst/a.txt", "/dst/keep.log"]
    assert "put_files 2 parallel=7" in cloud.calls
    assert run("put", "-r", str(tree), "/x", "--transfers", "0") == exit_codes.USAGE


def test_get_r_exclude_and_dry_run(cloud, tmp_path, capsys):  # noqa: F811
    for rel in ("a.txt", "logs/x.log", "logs/keep.log", "src/m.py"):
        cloud.add(f"/r/{rel}", rel.encode())
    back = tmp_path / "back"
    assert run("get", "-r", "--dry-run", "/r", str(back), "--exclude", "logs/") == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"would download 2 files from /r to {back}"
    assert not back.exists()
    assert (
        run("get", "-r", "/r", str(back), "--exclude", "*.log", "--include", "keep.log", "--transfers", "2")
        == 0
    )
    got = sorted(p.relative_to(back).as_posix() for p in back.rglob("*") if p.is_file())
    assert got == ["a.txt", "logs/keep.log", "src/m.py"]
    assert "get_files 3 parallel=2" in cloud.calls


def test_get_r_names_each_file_that_failed_and_exits_partial(cloud, tmp_path, capsys):  # noqa: F811
    cloud.add("/r/a", b"a")
    cloud.add("/r/b", b"b")
    cloud.fail["/r/b"] = "corrupt"
    assert run("get", "-r", "/r", str(tmp_path / "o")) == exit_codes.PARTIAL
    out, err = capsys.readouterr()
    assert f"failed {tmp_path}/o/b -> /r/b: corrupt" in err
    assert "1 failed" in out and (tmp_path / "o" / "a").read_bytes() == b"a"


def test_cp_r_with_filters_copies_file_by_file_and_dry_run_changes_nothing(cloud, capsys):  # noqa: F811
    for rel in ("a.txt", "b.raw", "d/c.txt", "d/e.raw"):
        cloud.add(f"/src/{rel}", rel.encode())
    cloud.mkdir("/backup")
    assert run("cp", "-r", "-n", "/src", "/backup/", "--exclude", "*.raw") == 0
    assert capsys.readouterr().out.splitlines()[:2] == [
        "would copy /src/a.txt -> /backup/src/a.txt",
        "would copy /src/d/c.txt -> /backup/src/d/c.txt",
    ]
    assert not any(p.startswith("/backup/") for p in cloud.files)
    assert run("cp", "-r", "/src", "/backup/", "--exclude", "*.raw") == 0
    assert sorted(p for p in cloud.files if p.startswith("/backup/")) == [
        "/backup/src/a.txt",
        "/backup/src/d/c.txt",
    ]


def test_single_file_put_keeps_mtime_and_mode_and_honours_dry_run_and_exclude(cloud, tmp_path, capsys):  # noqa: F811
    f = tmp_path / "old.sh"
    f.write_bytes(b"#!/bin/sh\n")
    f.chmod(0o755)
    os.utime(f, (1_577_836_800, 1_577_836_800))  # 2020-01-01
    assert run("put", "-n", str(f), "/o.sh") == 0
    assert capsys.readouterr().out == f"would upload {f} -> /o.sh\n" and "/o.sh" not in cloud.files
    assert run("put", str(f), "/o.sh", "--exclude", "*.sh") == 0 and "/o.sh" not in cloud.files
    assert run("put", str(f), "/o.sh") == 0
    assert (cloud.files["/o.sh"]["mtime"], cloud.files["/o.sh"]["mode"]) == (1_577_836_800, 0o755)


def test_bwlimit_takes_rclone_style_rates(cloud, tree):  # noqa: F811
    from hycloud import http
    from hycloud.cli import bwlimit

    assert run("--bwlimit", "fast", "ls", "/") == exit_codes.USAGE
    assert run("--bwlimit", "10M", "ls", "/") == 0
    assert bwlimit._INSTALLED and bwlimit._INSTALLED[0] in http.SESSION_HOOKS
    assert run("ls", "/") == 0  # a later run without the flag has no limit
    assert not bwlimit._INSTALLED


def test_a_rerun_into_the_same_folder_sends_only_what_is_not_there_and_says_so(cloud, tree, capsys):  # noqa: F811
    assert run("put", "-r", str(tree), "/dst") == 0
    capsys.readouterr()
    cloud.calls.clear()
    (tree / "a.txt").write_bytes(b"changed")
    (tree / "new.txt").write_bytes(b"new")
    assert run("put", "-r", str(tree), "/dst") == 0
    out, err = capsys.readouterr()
    assert "3 files already in /dst with the same content: not sent again" in err
    assert out.strip() == f"uploaded 2 files (10 bytes) from {tree} to /dst; 3 already there (not sent again)"
    assert [c for c in cloud.calls if c.startswith("put ")] == ["put /dst/a.txt", "put /dst/new.txt"]
    assert cloud.files["/dst/a.txt"]["data"] == b"changed"
