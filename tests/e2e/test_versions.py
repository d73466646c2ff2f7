"""Version history on the deployed cloud: what an overwrite or a delete replaced comes back byte
for byte with `hycloud restore`, small (EFS) and large (S3 behind a link file), in place or at
another path; an unknown version is a 404."""

from __future__ import annotations

import hashlib
import json
import os
import uuid

import pytest

from hycloud_core import content
from hycloud_core.constants import MiB

pytestmark = pytest.mark.e2e


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def home(alice) -> str:
    folder = f"/history-{uuid.uuid4().hex[:8]}"
    alice.sdk().mkdir(folder)
    return folder


def test_small_file_overwritten_and_deleted_comes_back(alice, home):
    sdk, path = alice.sdk(), f"{home}/notes.txt"
    first, second = os.urandom(1000), os.urandom(1500)
    sdk.put_bytes(path, first)
    sdk.put_bytes(path, second)

    listed = json.loads(alice.cli("--json", "versions", path).stdout)
    (old,) = listed["versions"]
    assert old["content_hash"] == content.hash_bytes(first) and old["sha256"] == sha(first)
    assert old["reason"] == "overwrite" and old["size"] == 1000
    assert listed["current"]["sha256"] == sha(second)

    alice.cli("restore", path, "--version", old["version"])
    assert sha(sdk.get_bytes(path)) == sha(first)

    alice.cli("restore", path, "--to", f"{home}/before-restore.txt")  # the newest: what the restore replaced
    assert sha(sdk.get_bytes(f"{home}/before-restore.txt")) == sha(second)
    assert sha(sdk.get_bytes(path)) == sha(first)

    sdk.rm(path)
    assert not sdk.exists(path)
    deleted = sdk.versions(path)
    assert deleted["current"] is None and deleted["versions"][0]["reason"] == "delete"
    sdk.restore(path)
    assert sha(sdk.get_bytes(path)) == sha(first)


def test_large_file_overwritten_comes_back_and_unknown_versions_are_404(alice, home, tmp_path):
    sdk, path = alice.sdk(), f"{home}/big.bin"
    size = sdk.small_file_threshold + MiB
    first, second = tmp_path / "first.bin", tmp_path / "second.bin"
    first.write_bytes(os.urandom(size))
    second.write_bytes(os.urandom(size))
    sdk.put(first, path)
    sdk.put(second, path)

    (old,) = sdk.versions(path)["versions"]
    assert old["kind"] == "large" and old["content_hash"] == content.hash_file(first)[0]
    done = json.loads(alice.cli("--json", "restore", path).stdout)
    assert done["restored"]["version"] == old["version"] and done["entry"]["storage"] == "large"
    sdk.get(path, tmp_path / "back.bin")
    assert sha((tmp_path / "back.bin").read_bytes()) == sha(first.read_bytes())

    unknown = alice.api().call(
        "POST", "/v1/restore", json={"path": path, "version": "0000000000000-00000000"}
    )
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "version-not-found"
    refused = alice.cli("restore", path, "--version", "0000000000000-00000000", check=False)
    assert refused.returncode == 5, refused.stderr  # not found
    malformed = alice.api().call("POST", "/v1/restore", json={"path": path, "version": "latest"})
    assert malformed.status_code == 400
    assert alice.api().call("GET", "/v1/versions", params={"path": f"{home}/never"}).status_code == 404
    sdk.get(path, tmp_path / "still.bin")  # the refusals changed nothing
    assert sha((tmp_path / "still.bin").read_bytes()) == sha(first.read_bytes())
