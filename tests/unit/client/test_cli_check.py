"""`hycloud check`: a local folder against a cloud folder by content hash (rclone's combined
report), run in-process against an in-memory cloud answering the Merkle exchange."""

from __future__ import annotations

import json

import pytest

from hycloud.cli import exit_codes
from tests.unit.client.cli_fake import cloud, run  # noqa: F401  (cloud is a fixture)


@pytest.fixture
def local(tmp_path):
    root = tmp_path / "local"
    for rel, data in {
        "same.txt": b"same",
        "d/inner.txt": b"inner",
        "changed.txt": b"new",
        "mine.txt": b"m",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def test_identical_trees_agree_with_exit_0(cloud, local, capsys):  # noqa: F811
    for rel in ("same.txt", "d/inner.txt", "changed.txt", "mine.txt"):
        cloud.add(f"/r/{rel}", (local / rel).read_bytes(), mtime=12345.0)  # times do not matter
    assert run("check", str(local), "hc:/r") == 0
    assert capsys.readouterr().out == "0 differences found; 4 matching files\n"
    assert cloud.calls.count("merkle") == 1  # equal trees: one exchange round


def test_differences_are_listed_rclone_style_and_exit_1(cloud, local, capsys):  # noqa: F811
    cloud.add("/r/same.txt", b"same")
    cloud.add("/r/d/inner.txt", b"inner")
    cloud.add("/r/changed.txt", b"old")
    cloud.add("/r/theirs.txt", b"t")
    cloud.add("/r/mine.txt/x", b"a folder where the local side has a file")
    assert run("check", str(local), "hc:/r") == exit_codes.ERROR
    assert capsys.readouterr().out.splitlines() == [
        "* changed.txt",
        "! mine.txt",
        "+ theirs.txt",
        "3 differences found (1 only in hc:/r, 1 with other content, 1 a file on one side, a folder on the other); 2 matching files",
    ]
    assert run("--json", "check", "hc:/r", str(local), "--exclude", "mine.txt") == exit_codes.ERROR
    report = json.loads(capsys.readouterr().out)
    assert (report["only_src"], report["only_dst"], report["differ"]) == (["theirs.txt"], [], ["changed.txt"])
    assert report["matching"] == ["d/inner.txt", "same.txt"] and report["clashes"] == []


def test_a_missing_cloud_folder_means_every_file_is_only_local(cloud, local, capsys):  # noqa: F811
    assert run("check", str(local), "hc:/none") == exit_codes.ERROR
    out = capsys.readouterr().out.splitlines()
    assert out[:4] == ["- changed.txt", "- d/inner.txt", "- mine.txt", "- same.txt"]


def test_check_needs_one_cloud_side_and_an_existing_local_folder(cloud, tmp_path):  # noqa: F811
    assert run("check", str(tmp_path), str(tmp_path)) == exit_codes.USAGE
    assert run("check", str(tmp_path / "nope"), "hc:/r") == exit_codes.NOT_FOUND


def test_hash_prints_the_clouds_content_hash_and_the_plain_sha256_like_sha256sum(tmp_path, capsys):
    import hashlib
    import os
    import subprocess

    from hycloud_core import content

    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(9 * 1024 * 1024))  # two 8 MiB parts: the content hash is not the sha256
    assert run("hash", str(big)) == 0
    assert capsys.readouterr().out == f"{content.hash_file(big)[0]}  {big}\n"
    assert run("hash", "--sha256", str(big)) == 0
    line = capsys.readouterr().out
    assert line == f"{hashlib.sha256(big.read_bytes()).hexdigest()}  {big}\n"
    assert line == subprocess.run(["sha256sum", str(big)], capture_output=True, text=True).stdout
    assert run("--json", "hash", str(big)) == 0
    [shown] = json.loads(capsys.readouterr().out)
    assert shown["size"] == 9 * 1024 * 1024 and shown["content_hash"] != shown["sha256"]
    assert run("hash", str(tmp_path / "none")) == exit_codes.LOCAL_IO
