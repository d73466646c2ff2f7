"""A cached copy is served for a content hash only when S3 vouches it holds that content.

S3's checksum reports are modelled as AWS documents them (a composite `<b64>-N` for multipart
objects, the whole object's digest otherwise); moto does not keep them that way, and the
deployed local cloud's S3 does (tests/e2e/test_share_isolation.py)."""

from __future__ import annotations

import hashlib
import os

import pytest
from botocore.exceptions import ClientError

from hycloud_core import content
from hycloud_core.store import cached_copies
from hycloud_core.store.multipart import ObjectWriter

MiB = 1024 * 1024


class FakeS3:
    """Objects with the SHA-256 checksums S3 keeps for what ObjectWriter and put_bytes send."""

    def __init__(self) -> None:
        self.objects: dict[str, tuple[bytes, str | None]] = {}
        self.uploads: dict[str, dict[int, bytes]] = {}

    def put_object(self, Bucket: str, Key: str, Body: bytes, ChecksumSHA256: str | None = None) -> dict:
        if ChecksumSHA256 is not None:
            assert ChecksumSHA256 == content.b64(hashlib.sha256(Body).digest())  # S3 refuses otherwise
        self.objects[Key] = (Body, ChecksumSHA256)
        return {}

    def create_multipart_upload(self, Bucket: str, Key: str, ChecksumAlgorithm: str) -> dict:
        self.uploads[Key] = {}
        return {"UploadId": Key}

    def upload_part(self, UploadId: str, PartNumber: int, Body: bytes, ChecksumSHA256: str, **_) -> dict:
        assert ChecksumSHA256 == content.b64(hashlib.sha256(Body).digest())
        self.uploads[UploadId][PartNumber] = Body
        return {"ETag": str(PartNumber)}

    def complete_multipart_upload(self, Bucket: str, Key: str, UploadId: str, MultipartUpload: dict) -> None:
        parts = self.uploads.pop(UploadId)
        bodies = [parts[p["PartNumber"]] for p in MultipartUpload["Parts"]]
        digests = b"".join(hashlib.sha256(body).digest() for body in bodies)
        composite = f"{content.b64(hashlib.sha256(digests).digest())}-{len(bodies)}"
        self.objects[Key] = (b"".join(bodies), composite)

    def head_object(self, Bucket: str, Key: str, ChecksumMode: str) -> dict:
        if Key not in self.objects:
            raise ClientError({"Error": {"Code": "404"}}, "HeadObject")
        body, checksum = self.objects[Key]
        return {"ContentLength": len(body), **({"ChecksumSHA256": checksum} if checksum else {})}


@pytest.mark.parametrize("size", [0, 100, 8 * MiB, 17 * MiB + 3])
def test_a_written_object_reports_its_content_hash(size):
    s3, data = FakeS3(), os.urandom(size)
    writer = ObjectWriter(s3, "b", "k")
    writer.write(data)
    writer.complete()
    assert s3.objects["k"][0] == data
    assert cached_copies.holds(s3, "b", "k", content.hash_bytes(data))


def test_a_small_copy_is_keyed_by_its_content_hash_not_its_sha256():
    s3, data = FakeS3(), os.urandom(288)
    key = cached_copies.put_bytes(s3, "b", data)
    assert key == f"shares/{content.hash_bytes(data)}" != f"shares/{hashlib.sha256(data).hexdigest()}"
    assert s3.objects[key][0] == data


def test_an_object_without_a_checksum_or_of_other_bytes_is_not_reused():
    s3, data, other = FakeS3(), os.urandom(300), os.urandom(300)
    key = cached_copies.key_of(content.hash_bytes(data))
    s3.put_object(Bucket="b", Key=key, Body=other)  # no checksum kept: S3 vouches for nothing
    assert not cached_copies.holds(s3, "b", key, content.hash_bytes(data))
    s3.put_object(Bucket="b", Key=key, Body=other, ChecksumSHA256=content.b64(hashlib.sha256(other).digest()))
    assert not cached_copies.holds(s3, "b", key, content.hash_bytes(data))
    assert cached_copies.put_bytes(s3, "b", data) == key  # rewritten with the right bytes
    assert s3.objects[key][0] == data


def test_a_missing_object_is_not_held():
    assert not cached_copies.holds(FakeS3(), "b", "shares/none", "0" * 64)


def test_a_key_is_only_ever_a_content_hash():
    with pytest.raises(Exception, match="64 lowercase hex"):
        cached_copies.key_of("../objects/x")
