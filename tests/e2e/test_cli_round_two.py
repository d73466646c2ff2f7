"""The CLI against the deployed cloud, for what needs it: a single `put` keeping mtime and mode
(small files on EFS, large ones in their link file), a tree upload past bad names, `cat`/`head`/
`get -` of a large file read by ranges, `check` over the real Merkle route, the browsing commands,
and `--bwlimit` holding a presigned S3 upload to its rate."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time

from hycloud.cli import exit_codes
from tests.e2e.conftest import HYCLOUD, User
from tests.e2e.module_user import fresh_home, module_user

MiB = 1024 * 1024
Y2020 = 1_577_836_800


user = module_user("round2")
home = fresh_home("r2")


def stdout_bytes(user: User, *args: str, cwd: str | None = None) -> bytes:
    """What `hycloud ARGS` wrote to stdout, as bytes (the user's CLI helper reads text)."""
    env = user.cli_env()
    done = subprocess.run([HYCLOUD, *args], env=env, capture_output=True, timeout=120, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_single_file_put_keeps_mtime_and_mode_small_and_large(user, home, tmp_path):
    small, large = tmp_path / "run.sh", tmp_path / "big.bin"
    small.write_bytes(b"#!/bin/sh\necho hi\n")
    large.write_bytes(os.urandom(3 * MiB))  # above the 2 MiB threshold: straight to S3
    for f, mode in ((small, 0o755), (large, 0o604)):
        f.chmod(mode)
        os.utime(f, (Y2020, Y2020))
        user.cli("put", str(f), f"{home}/")
        st = user.sdk().stat(f"{home}/{f.name}")  # what the cloud stored; the CLI's put is the test
        assert (st["mtime"], st["mode"]) == (Y2020, mode), st
    on_efs = user.ns_dir() / home.lstrip("/") / "run.sh"
    assert on_efs.stat().st_mtime == Y2020 and on_efs.stat().st_mode & 0o777 == 0o755


def test_a_tree_upload_goes_on_past_bad_names_and_names_each(user, home, tmp_path):
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    good = {"a.txt": b"a", "b.txt": b"b", "sub/c.txt": b"c", "sub/d.txt": b"d", "e.bin": os.urandom(3 * MiB)}
    for rel, data in good.items():
        (tree / rel).write_bytes(data)
    (tree / "back\\slash.txt").write_bytes(b"x")
    (tree / "line\nbreak.txt").write_bytes(b"y")
    done = user.cli("put", "-r", str(tree), f"{home}/t", check=False)
    assert done.returncode == exit_codes.PARTIAL, done.stderr
    err = done.stderr.splitlines()
    assert f"refused {tree}/back\\slash.txt: path contains a backslash" in err
    assert f"refused {tree}/line\\nbreak.txt: path contains control characters" in err
    assert f"uploaded 5 files ({sum(map(len, good.values())):,} bytes)" in done.stdout
    assert "2 refused (bad names)" in done.stdout
    for rel, data in good.items():
        assert user.sdk().get_bytes(f"{home}/t/{rel}") == data, rel
    assert sorted(e["name"] for e in user.sdk().ls(f"{home}/t")) == ["a.txt", "b.txt", "e.bin", "sub"]


def test_cat_head_and_get_dash_stream_a_large_file(user, home, tmp_path):
    lines = b"".join(b"row %07d\n" % i for i in range(400_000))  # 4.8 MB: a large file
    src = tmp_path / "rows.txt"
    src.write_bytes(lines)
    user.cli("put", str(src), f"{home}/rows.txt")
    out = stdout_bytes(user, "cat", f"{home}/rows.txt")
    assert hashlib.sha256(out).hexdigest() == hashlib.sha256(lines).hexdigest()
    assert stdout_bytes(user, "get", f"{home}/rows.txt", "-", cwd=str(tmp_path)) == lines
    assert not (tmp_path / "-").exists()
    assert (
        stdout_bytes(user, "head", "-n", "3", f"{home}/rows.txt")
        == b"row 0000000\nrow 0000001\nrow 0000002\n"
    )
    # `head -c` reads the same first range as `head -n`: tests/unit/client/test_cli_browse.py


def test_check_over_the_merkle_route(user, home, tmp_path):
    tree = tmp_path / "c"
    (tree / "d").mkdir(parents=True)
    (tree / "x.txt").write_bytes(b"x")
    (tree / "d" / "y.txt").write_bytes(b"y")
    user.cli("put", "-r", str(tree), f"{home}/c")
    agree = user.cli("check", str(tree), f"hc:{home}/c")
    assert agree.stdout == "0 differences found; 2 matching files\n"
    (tree / "x.txt").write_bytes(b"changed")
    (tree / "new.txt").write_bytes(b"n")
    user.sdk().put_bytes(f"{home}/c/d/only-cloud.txt", b"o")
    differ = user.cli("check", str(tree), f"hc:{home}/c", check=False)
    assert differ.returncode == exit_codes.ERROR
    assert differ.stdout.splitlines()[:3] == ["+ d/only-cloud.txt", "- new.txt", "* x.txt"]


def test_browsing_commands_on_the_cloud(user, home, tmp_path):
    sdk = user.sdk()
    sdk.put_bytes(f"{home}/b/one.txt", b"1" * 10, parents=True)
    sdk.put_bytes(f"{home}/b/deep/two.py", b"2" * 20, parents=True)
    assert (
        user.cli("ls", "-R", f"{home}/b").stdout == f"{home}/b:\ndeep/\none.txt\n\n{home}/b/deep:\ntwo.py\n"
    )
    assert user.cli("du", "-s", f"{home}/b").stdout == f"30\t{home}/b\n"
    # `ls FILE`, `find` and `tree` walk the same listings as `ls -R` and `du`; what they print is
    # checked in-process: tests/unit/client/test_cli_browse.py
    user.cli("touch", f"{home}/b/new")
    assert sdk.stat(f"{home}/b/new")["size"] == 0
    before = sdk.stat(f"{home}/b/one.txt")["mtime"]
    time.sleep(1.1)
    user.cli("touch", f"{home}/b/one.txt")
    assert sdk.stat(f"{home}/b/one.txt")["mtime"] > before and sdk.get_bytes(f"{home}/b/one.txt") == b"1" * 10


def test_bwlimit_holds_a_presigned_upload_to_its_rate(user, home, tmp_path):
    f = tmp_path / "paced.bin"
    data = os.urandom(4 * MiB)
    f.write_bytes(data)
    started = time.monotonic()
    user.cli("--bwlimit", "1M", "put", "--plain", str(f), f"{home}/paced.bin")
    took = time.monotonic() - started
    assert took >= 2.8, took  # 4 MiB at 1 MiB/s, the first second's worth at once: at least 3 s
    assert user.sdk().get_bytes(f"{home}/paced.bin") == data


def test_a_rerun_of_put_r_sends_only_what_the_cloud_does_not_hold_and_says_so(user, home, tmp_path):
    tree = tmp_path / "rerun"
    (tree / "d").mkdir(parents=True)
    for i in range(30):
        (tree / "d" / f"f{i:02d}.txt").write_bytes(b"%d" % i)
    user.cli("put", "-r", str(tree), f"{home}/rerun")
    (tree / "d" / "f07.txt").write_bytes(b"changed")
    again = user.cli("-v", "put", "-r", str(tree), f"{home}/rerun")
    assert f"29 files already in {home}/rerun with the same content: not sent again" in again.stderr
    assert again.stdout.startswith(f"uploaded 1 file (7 bytes) from {tree} to {home}/rerun; 29 already there")
    lines = again.stderr.splitlines()  # (a put also asks /v1/bundles/download for .hcenc headers)
    bundles = [line for line in lines if "/v1/bundles" in line and "/v1/bundles/download" not in line]
    assert len(bundles) == 1, bundles  # the one changed file, not the whole tree again
    assert user.sdk().get_bytes(f"{home}/rerun/d/f07.txt") == b"changed"


def test_after_a_conflict_the_next_sync_has_nothing_to_say(user, home, tmp_path):
    src, sdk = tmp_path / "s", user.sdk()
    src.mkdir()
    (src / "notes.txt").write_bytes(b"v1\n")
    user.cli("sync", str(src), f"hc:{home}/s")
    (src / "notes.txt").write_bytes(b"laptop\n")
    os.utime(src / "notes.txt", (time.time() + 3600, time.time() + 3600))  # newer: it wins
    sdk.put_bytes(f"{home}/s/notes.txt", b"cloud\n")
    first = json.loads(user.cli("--json", "sync", str(src), f"hc:{home}/s").stdout)
    [conflict] = first["conflicts"]
    assert (src / conflict["kept_as"]).read_bytes() == b"cloud\n"  # the loser on both sides
    assert sdk.get_bytes(f"{home}/s/{conflict['kept_as']}") == b"cloud\n"
    for args in ((), ("--delete",)):
        again = user.cli("sync", *args, str(src), f"hc:{home}/s")
        assert "not deleted" not in again.stdout and again.stdout.startswith("uploaded 0 files"), again.stdout
    assert sorted(e["name"] for e in sdk.ls(f"{home}/s")) == sorted(["notes.txt", conflict["kept_as"]])
