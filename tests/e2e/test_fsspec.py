"""`hycloud://` through fsspec: pandas CSV and Parquet round trips, and the filesystem calls."""

from __future__ import annotations

import hashlib
import random

import fsspec
import pandas as pd
import pytest

from hycloud_core import content


@pytest.fixture(scope="module")
def options(alice) -> dict:
    return {"endpoint": alice.deployment.api_url, "key": alice.key}


@pytest.fixture(scope="module")
def fs(options):
    return fsspec.filesystem("hycloud", **options)


def test_protocol_is_registered_by_entry_point():
    from hycloud.fsspec_fs import HyCloudFileSystem

    assert fsspec.get_filesystem_class("hycloud") is HyCloudFileSystem
    assert any(
        ep.name == "hycloud"
        for ep in __import__("importlib.metadata").metadata.entry_points(group="fsspec.specs")
    )


def test_pandas_csv_round_trip(alice, options):
    df = pd.DataFrame(
        {"id": range(2000), "name": [f"n{i}" for i in range(2000)], "x": [i / 7 for i in range(2000)]}
    )
    df.to_csv("hycloud://pd/table.csv", index=False, storage_options=options)
    stored = alice.sdk().get_bytes("/pd/table.csv")
    assert stored == df.to_csv(index=False).encode()
    back = pd.read_csv("hycloud://pd/table.csv", storage_options=options)
    pd.testing.assert_frame_equal(back, df)


def test_pandas_parquet_round_trip_of_a_large_file(alice, options):
    """Above the small-file threshold: written to S3 on close, read back by ranged reads."""
    rng = random.Random(5)
    df = pd.DataFrame({"k": range(150_000), "blob": [rng.randbytes(24).hex() for _ in range(150_000)]})
    df.to_parquet("hycloud://pd/big.parquet", storage_options=options, compression=None)
    info = alice.sdk().stat("/pd/big.parquet")
    assert info["storage"] == "large"
    back = pd.read_parquet("hycloud://pd/big.parquet", storage_options=options)
    pd.testing.assert_frame_equal(back, df)
    back_cols = pd.read_parquet("hycloud://pd/big.parquet", columns=["k"], storage_options=options)
    assert back_cols["k"].tolist() == list(range(150_000))


def test_credentials_from_the_environment(alice, monkeypatch):
    """No storage_options: the client configuration and environment, as for the CLI."""
    monkeypatch.setenv("HYCLOUD_CONFIG", "/nonexistent/config.json")
    monkeypatch.setenv("HYCLOUD_ENDPOINT", alice.deployment.api_url)
    monkeypatch.setenv("HYCLOUD_API_KEY", alice.key)
    alice.sdk().put_bytes("/pd/env.csv", b"a,b\n1,2\n", parents=True)
    fs = fsspec.filesystem("hycloud", skip_instance_cache=True)
    assert fs.cat("hycloud://pd/env.csv") == b"a,b\n1,2\n"
    monkeypatch.setenv("HYCLOUD_API_KEY", "hck_not_a_key")
    with pytest.raises(Exception) as err:
        fsspec.filesystem("hycloud", skip_instance_cache=True).cat("/pd/env.csv")
    assert getattr(err.value, "status", None) == 401


def test_filesystem_calls(fs, alice, tmp_path):
    fs.mkdir("hycloud://fsx/a/b")
    with pytest.raises(FileExistsError):
        fs.mkdir("hycloud://fsx/a/b")
    fs.pipe("hycloud://fsx/a/b/one.txt", b"one")
    assert fs.cat("hycloud://fsx/a/b/one.txt") == b"one"
    assert fs.cat_file("/fsx/a/b/one.txt", start=1, end=3) == b"ne"
    assert fs.ls("/fsx/a", detail=False) == ["/fsx/a/b"]
    assert fs.info("/fsx/a/b/one.txt")["size"] == 3 and fs.isdir("/fsx/a") and not fs.exists("/fsx/none")
    local = tmp_path / "up.bin"
    local.write_bytes(random.Random(1).randbytes(3 * 1024 * 1024))
    fs.put(str(local), "hycloud://fsx/up.bin")
    assert alice.sdk().stat("/fsx/up.bin")["content_hash"] == content.hash_file(local)[0]
    fs.get("hycloud://fsx/up.bin", str(tmp_path / "down.bin"))
    assert (
        hashlib.sha256((tmp_path / "down.bin").read_bytes()).digest()
        == hashlib.sha256(local.read_bytes()).digest()
    )
    fs.mv("/fsx/up.bin", "/fsx/a/moved.bin")
    assert fs.exists("/fsx/a/moved.bin") and not fs.exists("/fsx/up.bin")
    assert sorted(fs.find("/fsx")) == ["/fsx/a/b/one.txt", "/fsx/a/moved.bin"]
    fs.rm("/fsx/a/moved.bin")
    assert not fs.exists("/fsx/a/moved.bin")
    fs.rm("/fsx", recursive=True)
    assert not fs.exists("/fsx")
    with pytest.raises(FileNotFoundError):
        fs.cat("/fsx/a/b/one.txt")
