"""Coded files under the rules plain large files follow (issue 29): `cp` of a coded file links its
blocks at a second path, block URLs go only to blocks of the caller's own upload, and repair
verifies blocks by their contents."""

from __future__ import annotations

import hashlib
import os

import pytest

from hycloud_core.constants import MiB
from infra.local import deploy as local
from tests.e2e.conftest import _make_user


@pytest.fixture(scope="module")
def instances(deployment) -> dict[str, dict[str, str]]:
    found = local.instances()
    if len(found) < 3:
        pytest.skip("erasure coding needs three instances (hycloud:regions)")
    return found


@pytest.fixture(scope="module")
def user(deployment, instances):
    return _make_user(deployment, "trustcoded")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _put_coded(user, tmp_path, data: bytes, remote: str) -> dict:
    src = tmp_path / "src.bin"
    src.write_bytes(data)
    result = user.sdk().put(src, remote, coded=True)
    assert result["coded"] == {"n": 3, "k": 2}
    return result


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
