"""A large upload is refused before any byte is sent when it could never commit (issue 29): its
destination folder is missing or its size does not fit the quota. The upload's start checks what
its commit checks again; over quota the CLI exits with its own code."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from hycloud.cli import exit_codes
from hycloud.transfer.coded import _encode
from hycloud_core import content
from hycloud_core.constants import MiB
from tests.e2e.conftest import _make_user
from tests.e2e.test_accounts import admin

SIZE = 20 * MiB + 3  # three parts: big enough to be a multipart upload, small enough to be quick


@pytest.fixture
def user(deployment):
    return _make_user(deployment, "preflight")


def _big_file(tmp_path: Path) -> tuple[Path, str]:
    src = tmp_path / f"big-{uuid.uuid4().hex[:6]}.bin"
    src.write_bytes(os.urandom(SIZE))
    return src, content.hash_file(src)[0]


def _open_uploads(deployment, content_hash: str) -> list[dict]:
    """Multipart uploads open in the bucket at the content's key: where parts would have gone."""
    listed = deployment.client("s3").list_multipart_uploads(
        Bucket=deployment.outputs["BucketName"], Prefix=content.object_key(content_hash)
    )
    return listed.get("Uploads", [])


def test_put_into_a_missing_folder_fails_before_any_part_is_sent(deployment, user, tmp_path):
    src, content_hash = _big_file(tmp_path)
    result = user.cli("put", str(src), "/no-such-folder/big.bin", check=False)
    assert result.returncode == exit_codes.NOT_FOUND, result.stdout + result.stderr
    assert "not-found" in result.stderr
    assert _open_uploads(deployment, content_hash) == []
    assert deployment.object_record(content_hash) is None


def test_put_over_quota_fails_before_any_part_is_sent_with_its_own_exit_code(deployment, user, tmp_path):
    admin(deployment, "set-quota", user.name, "--bytes", str(10 * MiB))
    src, content_hash = _big_file(tmp_path)
    result = user.cli("put", str(src), "/big.bin", check=False)
    assert result.returncode == exit_codes.QUOTA_EXCEEDED, result.stdout + result.stderr
    assert exit_codes.QUOTA_EXCEEDED not in (exit_codes.AUTH, exit_codes.ERROR)
    assert "quota-exceeded" in result.stderr
    assert _open_uploads(deployment, content_hash) == []


def test_put_into_a_file_as_folder_fails_before_any_part_is_sent(deployment, user, tmp_path):
    user.cli("mkdir", "/d")
    (tmp_path / "small.txt").write_bytes(b"small")
    user.cli("put", str(tmp_path / "small.txt"), "/d/f")
    src, content_hash = _big_file(tmp_path)
    result = user.cli("put", str(src), "/d/f/big.bin", check=False)
    assert result.returncode != 0
    assert _open_uploads(deployment, content_hash) == []


def _coded_body(tmp_path: Path, remote: str) -> dict:
    tmp_path.mkdir(parents=True, exist_ok=True)
    src = tmp_path / "coded.bin"
    src.write_bytes(os.urandom(2 * MiB + 5))
    folder = tmp_path / "blocks"
    folder.mkdir()
    layout = _encode(src, 3, 2, MiB, folder)
    return {
        "path": remote,
        "size": src.stat().st_size,
        "content_hash": content.hash_file(src)[0],
        "layout": layout,
    }


def test_coded_upload_start_hands_out_no_url_for_a_missing_folder_or_over_quota(deployment, user, tmp_path):
    api = user.api()
    missing = api.call("POST", "/v1/coded/uploads", json=_coded_body(tmp_path, "/nowhere/c.bin"))
    assert missing.status_code == 404, missing.text[:300]
    assert missing.json()["error"]["code"] == "not-found"
    admin(deployment, "set-quota", user.name, "--bytes", str(MiB))
    over = api.call("POST", "/v1/coded/uploads", json=_coded_body(tmp_path / "x", "/c.bin"))
    assert over.status_code == 403, over.text[:300]
    assert over.json()["error"]["code"] == "quota-exceeded"


def test_plain_upload_start_with_a_path_checks_it(deployment, user, tmp_path):
    src, content_hash = _big_file(tmp_path)
    digests = content.hash_file(src)[1]
    body = {
        "size": SIZE,
        "content_hash": content_hash,
        "part_digests": [content.b64(d) for d in digests],
        "path": "/missing/big.bin",
    }
    answer = user.api().call("POST", "/v1/uploads", json=body)
    assert answer.status_code == 404, answer.text[:300]
    assert "urls" not in answer.json()
