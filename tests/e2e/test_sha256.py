"""Every file's plain sha256 (what `sha256sum` prints) in `stat`, small and large, kept through
copies and moves, and beside it the content hash the cloud names content by."""

from __future__ import annotations

import hashlib
import os

import pytest

from hycloud_core import content

pytestmark = pytest.mark.e2e
MiB = 1024 * 1024


def test_stat_of_a_small_file_has_its_sha256_and_content_hash(alice):
    sdk, data = alice.sdk(), os.urandom(3000)
    sdk.put_bytes("/sums/small.txt", data, parents=True)
    entry = sdk.stat("/sums/small.txt")
    assert entry["storage"] == "small"
    assert entry["sha256"] == hashlib.sha256(data).hexdigest()
    assert entry["content_hash"] == content.hash_bytes(data)


def test_a_large_file_keeps_its_sha256_through_copy_move_and_a_new_version(alice, tmp_path):
    sdk = alice.sdk()
    first, second = tmp_path / "first.bin", tmp_path / "second.bin"
    first.write_bytes(os.urandom(sdk.small_file_threshold + MiB))
    second.write_bytes(os.urandom(sdk.small_file_threshold + 2 * MiB))
    sdk.put(first, "/sums/big.bin", parents=True, via="direct", coded=False)
    entry = sdk.stat("/sums/big.bin")
    assert entry["storage"] == "large"
    assert entry["sha256"] == hashlib.sha256(first.read_bytes()).hexdigest()
    assert entry["content_hash"] == content.hash_file(first)[0]

    sdk.cp("/sums/big.bin", "/sums/copy.bin")
    sdk.mv("/sums/copy.bin", "/sums/moved.bin")
    assert sdk.stat("/sums/moved.bin")["sha256"] == entry["sha256"]

    sdk.put(second, "/sums/big.bin", via="direct", coded=False)  # the new version's own sum
    assert sdk.stat("/sums/big.bin")["sha256"] == hashlib.sha256(second.read_bytes()).hexdigest()
    assert sdk.stat("/sums/moved.bin")["sha256"] == entry["sha256"]


def test_a_commit_with_a_malformed_sha256_is_refused_and_nothing_is_linked(alice):
    http = alice.sdk().http
    response = http.session.post(
        http.base + "/v1/uploads/commit",
        json={"path": "/sums/bad.bin", "content_hash": "0" * 64, "sha256": "not-a-hash"},
        timeout=30,
    )
    assert response.status_code == 400, response.text
    assert not alice.sdk().exists("/sums/bad.bin")


def test_an_erasure_coded_file_has_its_sha256(alice, tmp_path):
    sdk = alice.sdk()
    if sdk.info().get("coded_threshold") is None:
        pytest.skip("erasure coding needs three instances (hycloud:regions)")
    local = tmp_path / "coded.bin"
    local.write_bytes(os.urandom(sdk.small_file_threshold + MiB))
    sdk.put(local, "/sums/coded.bin", parents=True, coded=True)
    try:
        entry = sdk.stat("/sums/coded.bin")
        assert entry["sha256"] == hashlib.sha256(local.read_bytes()).hexdigest()
        assert entry["content_hash"] == content.hash_file(local)[0]
    finally:  # later repair and migration jobs walk every coded file
        sdk.rm("/sums/coded.bin")


@pytest.mark.parametrize("kind", ["version", "rsync"])
def test_a_version_made_by_a_delta_upload_has_the_sha256_the_cloud_computed(alice, tmp_path, kind):
    sdk, remote = alice.sdk(), f"/sums/delta-{kind}.bin"
    old, new = tmp_path / "old.bin", tmp_path / "new.bin"
    data = bytearray(os.urandom(sdk.small_file_threshold + 2 * MiB))
    old.write_bytes(data)
    data[1000:1100] = os.urandom(100)
    new.write_bytes(data)
    sdk.put(old, remote, parents=True, via="direct", coded=False)
    entry = sdk.put(new, remote, base=old, delta_kind=kind, force_delta=True)
    assert entry["mode"] == "delta", entry
    assert sdk.stat(remote)["sha256"] == hashlib.sha256(new.read_bytes()).hexdigest()
