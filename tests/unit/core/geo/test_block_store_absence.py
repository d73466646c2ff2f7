"""A block is absent only when S3 says so (404, NoSuchKey): a 403 is a refusal and stays an error.

Without s3:ListBucket on a bucket, S3 answers a missing key 403; reading that as "absent" would
hide a missing right behind rebuilds and repairs, so the fix is the right (tests/infra/
test_cross_region_rights.py), and the store keeps 403 an error.
"""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from hycloud_core.fs.blocks import BlockStore
from hycloud_core.instances import Instance

HASH = "ab" * 32


class RefusingS3:
    """head_object and get_object answer with the given S3 error code and HTTP status."""

    def __init__(self, code: str, status: int) -> None:
        self.error = {
            "Error": {"Code": code, "Message": code},
            "ResponseMetadata": {"HTTPStatusCode": status},
        }

    def head_object(self, **_: object) -> dict:
        raise ClientError(self.error, "HeadObject")

    def get_object(self, **_: object) -> dict:
        raise ClientError(self.error, "GetObject")


def store(code: str, status: int) -> BlockStore:
    s3 = RefusingS3(code, status)
    return BlockStore([Instance("us-west-2", "bucket", "relay", "delta")], lambda _region: s3)


@pytest.mark.parametrize(("code", "status"), [("404", 404), ("NoSuchKey", 404), ("NotFound", 404)])
def test_a_missing_block_is_absent(code: str, status: int) -> None:
    blocks = store(code, status)
    assert blocks.has("us-west-2", HASH, 10) is False
    assert blocks.get("us-west-2", HASH) is None


@pytest.mark.parametrize(("code", "status"), [("403", 403), ("AccessDenied", 403)])
def test_a_refused_block_is_an_error_not_absent(code: str, status: int) -> None:
    blocks = store(code, status)
    with pytest.raises(ClientError):
        blocks.has("us-west-2", HASH, 10)
    with pytest.raises(ClientError):
        blocks.get("us-west-2", HASH)
