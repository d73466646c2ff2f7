"""No user reads another's file through a cached copy (issue: share-cache key collision).

A coded file's content hash is sha256 over its part digests, so a small file whose bytes are those
digests has a plain sha256 equal to it. Small files shared and coded files made whole are both
cached under `shares/`; whichever came first must never be served for the other.
"""

from __future__ import annotations

import hashlib
import json
import os

import pytest
import requests

from hycloud_core import content
from hycloud_core.constants import MiB
from tests.e2e.conftest import _make_user
from tests.e2e.test_coded_everywhere import _put_coded


@pytest.fixture(scope="module")
def owner(deployment, instances):
    return _make_user(deployment, "owner")


@pytest.fixture(scope="module")
def thief(deployment):
    return _make_user(deployment, "thief")


def _digests(data: bytes) -> bytes:
    """What the coded file's content hash is the plain sha256 of."""
    return b"".join(
        hashlib.sha256(data[i : i + content.PART_SIZE]).digest()
        for i in range(0, len(data), content.PART_SIZE)
    )


def _share_bytes(user, path: str) -> bytes:
    share = json.loads(user.cli("--json", "share", path, "--expires", "1h").stdout)
    got = requests.get(share["url"], timeout=60)
    assert got.status_code == 200, got.text
    return got.content


def _put_small(user, tmp_path, data: bytes, remote: str) -> None:
    src = tmp_path / "small.bin"
    src.write_bytes(data)
    user.cli("put", str(src), remote)


def test_a_small_file_of_part_digests_never_serves_the_coded_file(owner, thief, tmp_path):
    secret = os.urandom(9 * MiB + 11)
    result = _put_coded(owner, tmp_path, secret, "/secret.bin")
    assert hashlib.sha256(_digests(secret)).hexdigest() == result["content_hash"]
    assert _share_bytes(owner, "/secret.bin") == secret  # made whole and cached first
    _put_small(thief, tmp_path, _digests(secret), "/bait.bin")
    assert _share_bytes(thief, "/bait.bin") == _digests(secret)


def test_a_shared_small_file_never_poisons_the_coded_file(owner, thief, tmp_path):
    secret = os.urandom(9 * MiB + 13)
    bait = _digests(secret)
    _put_small(thief, tmp_path, bait, "/first.bin")
    assert _share_bytes(thief, "/first.bin") == bait  # cached first
    _put_coded(owner, tmp_path, secret, "/victim.bin")
    assert _share_bytes(owner, "/victim.bin") == secret
    whole = owner.api().call("GET", "/v1/coded/whole", params={"path": "/victim.bin"}).json()
    assert requests.get(whole["url"], timeout=60).content == secret
