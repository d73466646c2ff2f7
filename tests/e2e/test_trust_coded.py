"""Coded files under the rules plain large files follow (issue 29): `cp` of a coded file links its
blocks at a second path, block URLs go only to blocks of the caller's own upload, and repair
verifies blocks by their contents."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
import requests
from botocore.exceptions import ClientError, IncompleteReadError, ResponseStreamingError
from urllib3.exceptions import ProtocolError

from hycloud.transfer.coded import _encode
from hycloud_core import content
from hycloud_core.codec.layout import block_key
from hycloud_core.constants import MiB
from hycloud_core.fs.blocks import b64
from tests.e2e.conftest import _make_user
from tests.e2e.test_coded_everywhere import _put_coded
from tests.e2e.test_geo import _repair


@pytest.fixture(scope="module")
def user(deployment, instances):
    return _make_user(deployment, "trustcoded")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _get(user, tmp_path, remote: str) -> bytes:
    out = tmp_path / f"got-{_sha(remote.encode())[:8]}"
    user.cli("get", remote, str(out))
    data = out.read_bytes()
    out.unlink()
    return data


def test_cp_of_a_coded_file_is_a_second_readable_path_that_outlives_the_source(user, tmp_path):
    data = os.urandom(3 * MiB + 101)
    _put_coded(user, tmp_path, data, "/big.bin")
    copied = user.cli("cp", "/big.bin", "/copy.bin", check=False)
    assert copied.returncode == 0, copied.stdout + copied.stderr
    assert _sha(_get(user, tmp_path, "/copy.bin")) == _sha(data)
    assert _sha(_get(user, tmp_path, "/big.bin")) == _sha(data)  # the source is unchanged
    user.cli("rm", "/big.bin")
    assert _sha(_get(user, tmp_path, "/copy.bin")) == _sha(data)


def _link(user, remote: str) -> dict:
    return json.loads((user.ns_dir() / remote.lstrip("/")).read_bytes())


def _blocks_of(user, remote: str) -> list[dict]:
    """The blocks of a coded file as its link file places them: hash, size, instance."""
    return [b for chunk in _link(user, remote)["erasure"]["chunks"] for b in chunk["blocks"]]


def _read_block(deployment, instances, block: dict) -> bytes | None:
    """A block's bytes as its bucket serves them; None when they cannot be read whole."""
    s3 = deployment.client("s3", block["instance"])
    bucket = instances[block["instance"]]["BucketName"]
    try:
        return s3.get_object(Bucket=bucket, Key=block_key(block["hash"]))["Body"].read()
    except (ClientError, IncompleteReadError, ResponseStreamingError, ProtocolError):
        return None


def _intact(deployment, instances, block: dict) -> bool:
    data = _read_block(deployment, instances, block)
    return data is not None and _sha(data) == block["hash"] and len(data) == block["size"]


def _open_upload(user, tmp_path) -> tuple[str, dict]:
    """Start a coded upload of a small random file: its content hash and the start's answer."""
    src = tmp_path / "mine.bin"
    src.write_bytes(os.urandom(2 * MiB + 9))
    folder = tmp_path / "mine-blocks"
    folder.mkdir()
    layout = _encode(src, 3, 2, MiB, folder)
    content_hash = content.hash_file(src)[0]
    body = {"path": "/mine.bin", "size": src.stat().st_size, "content_hash": content_hash, "layout": layout}
    started = user.api().call("POST", "/v1/coded/uploads", json=body)
    assert started.status_code == 200, started.text[:300]
    return content_hash, {**body, **started.json()}


def _try_overwrite(url: str, block: dict) -> None:
    """What an attacker does with a PUT URL for someone else's block: send other bytes."""
    wrong = os.urandom(block["size"] + 1)
    requests.put(url, data=wrong, headers={"x-amz-checksum-sha256": b64(block["hash"])}, timeout=60)


@pytest.fixture(scope="module")
def victim(deployment, instances, tmp_path_factory):
    """User A with a coded file, and that file's blocks."""
    owner = _make_user(deployment, "victim")
    _put_coded(owner, tmp_path_factory.mktemp("victim"), os.urandom(3 * MiB + 7), "/private.bin")
    return owner, _blocks_of(owner, "/private.bin")


def test_no_block_url_for_a_block_outside_the_callers_upload(deployment, instances, victim, tmp_path):
    _owner, blocks = victim
    target = blocks[0]
    attacker = _make_user(deployment, "attacker")
    content_hash, _started = _open_upload(attacker, tmp_path)
    wire = {"instance": target["instance"], "hash": target["hash"], "size": target["size"] + 1}
    answer = attacker.api().call(
        "POST", "/v1/coded/uploads/urls", json={"content_hash": content_hash, "blocks": [wire]}
    )
    for url in answer.json().get("urls", []) if answer.status_code == 200 else []:
        if url:
            _try_overwrite(url, target)
    assert _intact(deployment, instances, target)
    assert 400 <= answer.status_code < 500, answer.text[:300]


def test_no_block_url_for_a_stored_block_declared_with_another_size(deployment, instances, victim, tmp_path):
    """An upload of one's own that names another user's chunk and blocks, sizes changed: the start
    hands out no PUT for a block key that holds an object."""
    owner, blocks = victim
    chunk = _link(owner, "/private.bin")["erasure"]["chunks"][0]
    attacker = _make_user(deployment, "attacker")
    src = tmp_path / "mine.bin"
    src.write_bytes(os.urandom(2 * MiB + 9))
    folder = tmp_path / "blocks"
    folder.mkdir()
    layout = _encode(src, 3, 2, 2 * MiB, folder)
    layout["chunks"][0]["key"] = chunk["key"]  # placed where the victim's chunk is
    for mine, theirs in zip(layout["chunks"][0]["blocks"], chunk["blocks"], strict=True):
        mine["hash"] = theirs["hash"]  # mine["size"] stays: not the stored block's size
    body = {"path": "/mine.bin", "size": src.stat().st_size, "content_hash": content.hash_file(src)[0]}
    answer = attacker.api().call("POST", "/v1/coded/uploads", json={**body, "layout": layout})
    urls = answer.json().get("urls", {}) if answer.status_code == 200 else {}
    for bi, theirs in enumerate(chunk["blocks"]):
        if urls.get(f"0/{bi}"):
            _try_overwrite(urls[f"0/{bi}"], theirs)
    assert all(_intact(deployment, instances, b) for b in chunk["blocks"])
    assert not any(key.startswith("0/") for key in urls), sorted(urls)


def _damage(deployment, instances, block: dict) -> None:
    """Spoil a stored block while S3's metadata still reports its size and SHA-256: a PUT of other
    bytes under its checksum, which the local S3 refuses yet leaves the object unreadable."""
    s3 = deployment.client("s3", block["instance"])
    bucket = instances[block["instance"]]["BucketName"]
    params = {"Bucket": bucket, "Key": block_key(block["hash"]), "ChecksumSHA256": b64(block["hash"])}
    url = s3.generate_presigned_url("put_object", ExpiresIn=60, Params=params)
    requests.put(url, data=os.urandom(block["size"]), headers={"x-amz-checksum-sha256": b64(block["hash"])})


@pytest.mark.slow
def test_repair_finds_a_block_whose_bytes_do_not_match_its_hash(deployment, instances, user, tmp_path):
    data = os.urandom(3 * MiB + 17)
    _put_coded(user, tmp_path, data, "/rot.bin")
    block = _blocks_of(user, "/rot.bin")[0]
    _damage(deployment, instances, block)
    s3 = deployment.client("s3", block["instance"])
    head = s3.head_object(
        Bucket=instances[block["instance"]]["BucketName"],
        Key=block_key(block["hash"]),
        ChecksumMode="ENABLED",
    )
    assert head["ContentLength"] == block["size"] and head.get("ChecksumSHA256") == b64(block["hash"])
    assert not _intact(deployment, instances, block)  # what a HEAD cannot see
    status = _repair(user.api(), block["instance"])
    assert status["state"] == "succeeded", status
    assert status["result"]["rebuilt"] >= 1 and status["result"]["unrecoverable"] == 0, status
    assert _intact(deployment, instances, block)
    assert _sha(_get(user, tmp_path, "/rot.bin")) == _sha(data)
