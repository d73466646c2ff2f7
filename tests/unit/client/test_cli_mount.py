"""`hycloud mount`'s options: sizes, timeouts and the cache folder are checked before anything
mounts (a bad one is a usage error, exit 2, naming the option), and good ones reach the mount,
its caches and libfuse's options."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from hycloud.cli import exit_codes
from hycloud.cli import mount as mount_cli
from hycloud.mount import fuse_ops
from tests.unit.client.cli_fake import run

MiB = 1024**2


@pytest.fixture
def mounted(monkeypatch) -> list[dict]:
    """What `mount()` was called with, instead of mounting; the client is a stand-in."""
    calls: list[dict] = []
    monkeypatch.setattr(
        "hycloud.mount.mount", lambda client, mountpoint, **kw: calls.append(kw | {"at": mountpoint})
    )
    monkeypatch.setattr("hycloud.sdk.client.HyCloud.from_config", staticmethod(lambda: object()))
    monkeypatch.delenv("HYCLOUD_MOUNT_CACHE_SIZE", raising=False)
    monkeypatch.delenv("HYCLOUD_MOUNT_CACHE_DIR", raising=False)
    return calls


@pytest.mark.parametrize(
    ("text", "size"),
    [("512M", 512 * MiB), ("1.5G", 1536 * MiB), ("800MiB", 800 * MiB), ("4g", 4 * 1024 * MiB)],
)
def test_cache_sizes_are_read_with_units(text, size):
    assert mount_cli.parse_size(text) == size


@pytest.mark.parametrize("text", ["lots", "-1G", "10X", "", "1M", "16777215"])
def test_a_size_that_is_not_one_or_below_16m_is_refused(text):
    with pytest.raises(typer.BadParameter):
        mount_cli.parse_size(text)


def test_a_size_given_reaches_the_mount(mounted, tmp_path):
    assert run("mount", str(tmp_path), "--cache-size", "16777216") == 0
    assert mounted[0]["cache_size"] == 16 * MiB


def test_the_defaults_are_a_2g_cache_a_2s_timeout_and_a_temporary_folder(mounted, tmp_path):
    assert run("mount", str(tmp_path)) == 0
    assert mounted == [
        {
            "at": str(tmp_path),
            "read_ahead": 8 * MiB,
            "cache_dir": None,
            "cache_size": 2048 * MiB,
            "metadata_ttl": 2.0,
        }
    ]


def test_the_cache_size_can_come_from_the_environment(mounted, tmp_path, monkeypatch):
    monkeypatch.setenv("HYCLOUD_MOUNT_CACHE_SIZE", "64M")
    assert run("mount", str(tmp_path)) == 0
    assert mounted[0]["cache_size"] == 64 * MiB


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--cache-size", "lots"], "--cache-size"),
        (["--cache-size", "1M"], "minimum of 16M"),
        (["--metadata-timeout", "-1"], "--metadata-timeout"),
        (["--metadata-timeout", "3601"], "--metadata-timeout"),
        (["--metadata-timeout", "soon"], "--metadata-timeout"),
        (["--read-ahead", "0"], "--read-ahead"),
    ],
)
def test_a_bad_value_is_a_usage_error_naming_its_option(mounted, tmp_path, capsys, args, named):
    assert run("mount", str(tmp_path), *args) == exit_codes.USAGE
    assert named in capsys.readouterr().err
    assert mounted == []


def test_the_cache_folder_cannot_be_inside_the_mount_point(mounted, tmp_path, capsys):
    assert run("mount", str(tmp_path), "--cache-dir", str(tmp_path / "cache")) == exit_codes.USAGE
    assert "inside the mount point" in capsys.readouterr().err
    assert run("mount", str(tmp_path), "--cache-dir", str(tmp_path)) == exit_codes.USAGE
    assert mounted == [] and not (tmp_path / "cache").exists()


def test_a_cache_folder_that_is_a_file_or_cannot_be_made_is_a_usage_error(mounted, tmp_path, capsys):
    (tmp_path / "mnt").mkdir()
    (tmp_path / "file").write_text("x")
    assert run("mount", str(tmp_path / "mnt"), "--cache-dir", str(tmp_path / "file")) == exit_codes.USAGE
    assert (
        run("mount", str(tmp_path / "mnt"), "--cache-dir", str(tmp_path / "file" / "sub")) == exit_codes.USAGE
    )
    assert "--cache-dir" in capsys.readouterr().err and mounted == []


def test_a_missing_cache_folder_is_made(mounted, tmp_path):
    (tmp_path / "mnt").mkdir()
    cache = tmp_path / "caches" / "hycloud"
    assert run("mount", str(tmp_path / "mnt"), "--cache-dir", str(cache), "--metadata-timeout", "0.5") == 0
    assert cache.is_dir()
    assert mounted[0]["cache_dir"] == str(cache.resolve()) and mounted[0]["metadata_ttl"] == 0.5


def test_a_mount_point_that_is_not_a_folder_is_a_usage_error(mounted, tmp_path):
    assert run("mount", str(tmp_path / "nope")) == exit_codes.USAGE
    assert mounted == []


@pytest.mark.parametrize(("ttl", "kernel"), [(0.0, 0.0), (0.5, 0.5), (2.0, 2.0), (60.0, 60.0)])
def test_the_kernel_keeps_entries_no_longer_than_the_mount_does(ttl, kernel):
    options = fuse_ops._fuse_options(ttl)
    assert options["attr_timeout"] == kernel and options["entry_timeout"] == kernel


def test_the_options_size_and_place_the_caches(tmp_path):
    ops = fuse_ops.HyCloudFuse(object(), cache_dir=str(tmp_path), cache_size=64 * MiB, metadata_ttl=0.25)  # type: ignore[arg-type]
    try:
        assert Path(ops.cache.folder).parent == tmp_path
        assert ops.cache.limit == 64 * MiB and ops.cache.ttl == 0.25 and ops.meta.ttl == 0.25
    finally:
        assert ops.cache.stop() == []
    assert list(tmp_path.iterdir()) == []  # nothing unsent: the mount's subfolder is removed
