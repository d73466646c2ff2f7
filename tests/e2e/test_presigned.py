"""Presigned S3 URLs of the deployment's bucket: a valid one works, a tampered or expired one is refused.

The local cloud must check S3 signatures (LocalStack skips the check unless told otherwise), or
no test here could tell a safe URL from an unsafe one. Requests with no signature at all are
still served by LocalStack's community edition, which enforces neither IAM nor bucket policies,
so "anonymous access is refused" cannot be shown locally; on AWS the bucket blocks public access.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
import uuid

import pytest
import requests
from botocore.config import Config

PUT_TIMEOUT_S = 30
LINK_TYPE = "application/vnd.hycloud.link+json"


@pytest.fixture(scope="module")
def bucket(deployment) -> tuple[object, str]:
    """An S3 client signing as the functions do (SigV4), and the deployment's bucket."""
    s3 = deployment.client("s3", config=Config(signature_version="s3v4"))
    return s3, deployment.outputs["BucketName"]


def _stored(s3, bucket: str, key: str, data: bytes) -> None:
    s3.put_object(Bucket=bucket, Key=key, Body=data)


def _get_url(s3, bucket: str, key: str, expires: int = 300) -> str:
    return s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=expires)


def _put_url(s3, bucket: str, key: str) -> str:
    return s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=300)


def _replaced(pattern: str, new: str, url: str) -> str:
    changed = re.sub(pattern, new, url)
    assert changed != url, f"{pattern} not in {url}"
    return changed


def _tampered(url: str, how: str, mine: str, other: str) -> str:
    """`url` altered as `how` says: pointed at the `other` key, its signature zeroed, or dated 2020."""
    return {
        "key": url.replace(mine, other),
        "signature": _zero_signature(url),
        "date-2020": _dated_2020(url),
    }[how]


def _zero_signature(url: str) -> str:
    return _replaced(r"X-Amz-Signature=[0-9a-f]{64}", "X-Amz-Signature=" + "0" * 64, url)


def _dated_2020(url: str) -> str:
    return _replaced(r"X-Amz-Date=\d{8}T\d{6}Z", "X-Amz-Date=20200101T000000Z", url)


def _exists(s3, bucket: str, key: str) -> bool:
    return s3.list_objects_v2(Bucket=bucket, Prefix=key).get("KeyCount", 0) > 0


def test_valid_presigned_get_and_put_work(bucket):
    s3, name = bucket
    key, data = f"presign/{uuid.uuid4().hex}", os.urandom(4096)
    put = requests.put(_put_url(s3, name, key), data=data, timeout=PUT_TIMEOUT_S)
    assert put.status_code == 200
    got = requests.get(_get_url(s3, name, key), timeout=PUT_TIMEOUT_S)
    assert got.status_code == 200 and hashlib.sha256(got.content).digest() == hashlib.sha256(data).digest()


@pytest.mark.parametrize("tamper", ["key", "signature", "date-2020"])
def test_tampered_presigned_get_is_refused(bucket, tamper):
    s3, name = bucket
    mine, other = f"presign/{uuid.uuid4().hex}", f"presign/{uuid.uuid4().hex}"
    _stored(s3, name, mine, b"mine")
    _stored(s3, name, other, b"someone else's secret")
    url = _tampered(_get_url(s3, name, mine), tamper, mine, other)
    got = requests.get(url, timeout=PUT_TIMEOUT_S)
    assert got.status_code == 403, (got.status_code, got.content[:200])
    assert b"someone else" not in got.content and b"mine" not in got.content


def test_expired_presigned_get_is_refused(bucket):
    s3, name = bucket
    key = f"presign/{uuid.uuid4().hex}"
    _stored(s3, name, key, b"short-lived")
    url = _get_url(s3, name, key, expires=1)
    time.sleep(2.5)
    got = requests.get(url, timeout=PUT_TIMEOUT_S)
    assert got.status_code == 403 and b"short-lived" not in got.content


@pytest.mark.parametrize("tamper", ["key", "signature", "date-2020"])
def test_tampered_presigned_put_stores_nothing(bucket, tamper):
    s3, name = bucket
    mine, other = f"presign/{uuid.uuid4().hex}", f"presign/{uuid.uuid4().hex}"
    url = _tampered(_put_url(s3, name, mine), tamper, mine, other)
    put = requests.put(url, data=b"planted", timeout=PUT_TIMEOUT_S)
    assert put.status_code == 403, (put.status_code, put.content[:200])
    assert not _exists(s3, name, mine) and not _exists(s3, name, other)


def test_download_url_from_the_api_is_checked(alice, tmp_path):
    """The URL the controller hands out for a large file: as given it serves the bytes, altered it does not."""
    data = os.urandom(3 * 1024 * 1024)
    local = tmp_path / "big.bin"
    local.write_bytes(data)
    alice.cli("put", str(local), "/presigned/big.bin", "--parents")
    link = alice.sdk().http.request(
        "GET", "/v1/files", params={"path": "/presigned/big.bin"}, headers={"Accept": LINK_TYPE}
    )
    url = link.json()["url"]
    got = requests.get(url, timeout=PUT_TIMEOUT_S)
    assert (
        got.status_code == 200 and hashlib.sha256(got.content).hexdigest() == hashlib.sha256(data).hexdigest()
    )
    for bad in (_zero_signature(url), _dated_2020(url)):
        refused = requests.get(bad, timeout=PUT_TIMEOUT_S)
        assert refused.status_code == 403 and len(refused.content) < 4096
