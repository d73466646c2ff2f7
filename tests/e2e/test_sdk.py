"""The SDK as a library user meets it: exported errors, large files in memory, trees, progress."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

import hycloud
from hycloud import HyCloud, NotFoundError
from tests.e2e.conftest import User, _make_user

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def user(deployment) -> User:
    return _make_user(deployment, "sdk")


@pytest.fixture(scope="module")
def client(user) -> HyCloud:
    return HyCloud(user.deployment.api_url, user.key)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_errors_are_exported_by_the_package_and_the_client(client):
    with pytest.raises(NotFoundError):
        client.stat("/no/such/file")
    with pytest.raises(client.NotFoundError):
        client.get_bytes("/no/such/file")
    assert issubclass(hycloud.ConflictError, hycloud.HyCloudError)
    with pytest.raises(client.ConflictError):
        client.mkdir("/", exist_ok=False)


def test_get_bytes_returns_a_large_file(client, tmp_path):
    data = os.urandom(5 * MiB + 3)  # above the 2 MiB small-file threshold: stored in S3
    (tmp_path / "large.bin").write_bytes(data)
    assert client.put(tmp_path / "large.bin", "/large.bin")["storage"] == "large"
    assert client.get_bytes("/large.bin") == data


def test_upload_tree_and_download_tree_round_trip_and_list_skipped_symlinks(client, tmp_path):
    src = tmp_path / "src"
    (src / "a" / "b").mkdir(parents=True)
    (src / "top.txt").write_bytes(b"top")
    (src / "a" / "b" / "deep.bin").write_bytes(os.urandom(3 * MiB))
    (src / "a" / "small.bin").write_bytes(os.urandom(1000))
    (src / "link").symlink_to(src / "top.txt")
    up = client.upload_tree(src, "/tree")
    assert up.skipped == [str(src / "link")] and len(up.files) == 3
    back = tmp_path / "back"
    down = client.download_tree("/tree", back)
    assert len(down.files) == 3
    for rel in ("top.txt", "a/b/deep.bin", "a/small.bin"):
        assert digest(back / rel) == digest(src / rel), rel
    assert not (back / "link").exists()


def test_progress_reaches_plain_callables_and_subscriber_objects(client, tmp_path):
    class Counter:
        def __init__(self) -> None:
            self.seen = 0

        def on_progress(self, bytes_transferred: int) -> None:
            self.seen += bytes_transferred

    for size in (1000, 9 * MiB):  # a small file (one request) and a multipart upload
        local = tmp_path / f"p{size}"
        local.write_bytes(os.urandom(size))
        calls: list[int] = []
        counter = Counter()
        client.put(local, f"/p{size}", progress=[calls.append, counter])
        assert sum(calls) == counter.seen == size and all(n > 0 for n in calls)
        down = Counter()
        client.get(f"/p{size}", tmp_path / f"back{size}", progress=down)
        assert down.seen == size and digest(tmp_path / f"back{size}") == digest(local)
