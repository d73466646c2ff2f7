"""What a block key holds decides what the controller hands out for it, and repair trusts bytes,
not metadata: a PUT URL only for an empty key, never over an object, whatever it holds; a block
whose metadata is fine but whose bytes are not is rebuilt."""

from __future__ import annotations

import hashlib
import io
import os

import pytest
from botocore.exceptions import IncompleteReadError

from hycloud_core.codec.layout import Block
from hycloud_core.errors import HyCloudError
from hycloud_core.fs.blocks import ABSENT, OTHER, STORED, BlockStore, b64
from hycloud_core.fs.coded import CodedFiles
from hycloud_core.instances import Instance
from tests.unit.core.geo.test_block_store_absence import RefusingS3

DATA = os.urandom(1000)
HASH = hashlib.sha256(DATA).hexdigest()


class Broken(io.BytesIO):
    def read(self, *_: object) -> bytes:
        raise IncompleteReadError(actual_bytes=0, expected_bytes=len(DATA))


class FakeS3:
    """One object at the block's key: its reported size and checksum, and what reading it gives."""

    def __init__(self, size: int, checksum: str | None, body: io.BytesIO) -> None:
        self.size, self.checksum, self.body = size, checksum, body

    def head_object(self, **_: object) -> dict:
        return {"ContentLength": self.size, **({"ChecksumSHA256": self.checksum} if self.checksum else {})}

    def get_object(self, **_: object) -> dict:
        return {"Body": self.body}

    def generate_presigned_url(self, method: str, **_: object) -> str:
        return f"https://put/{method}"


class Empty(RefusingS3):
    """No object at the key (404), and URLs to write one."""

    def __init__(self) -> None:
        super().__init__("404", 404)

    def generate_presigned_url(self, method: str, **_: object) -> str:
        return f"https://put/{method}"


def _store(s3: object) -> BlockStore:
    return BlockStore([Instance("us-west-2", "bucket", "relay", "delta")], lambda _region: s3)


@pytest.mark.parametrize(
    ("s3", "state"),
    [
        (RefusingS3("404", 404), ABSENT),
        (FakeS3(len(DATA), b64(HASH), io.BytesIO(DATA)), STORED),
        (FakeS3(len(DATA) + 1, b64(HASH), io.BytesIO(DATA)), OTHER),  # declared with another size
        (FakeS3(len(DATA), None, io.BytesIO(DATA)), OTHER),  # no checksum S3 verified
    ],
)
def test_state_of_a_block_key(s3, state):
    assert _store(s3).state("us-west-2", HASH, len(DATA)) == state


@pytest.mark.parametrize(
    ("body", "verified"),
    [(io.BytesIO(DATA), True), (io.BytesIO(os.urandom(len(DATA))), False), (Broken(), False)],
)
def test_verified_reads_the_bytes_back_whatever_the_metadata_says(body, verified):
    s3 = FakeS3(len(DATA), b64(HASH), body)
    assert _store(s3).verified("us-west-2", HASH, len(DATA)) is verified


def _files(s3: object) -> CodedFiles:
    files = object.__new__(CodedFiles)
    files.blocks = _store(s3)
    return files


def test_a_put_url_only_for_an_empty_key():
    block = [Block(HASH, len(DATA), "us-west-2")]
    assert _files(Empty())._put_urls(block) == ["https://put/put_object"]
    assert _files(FakeS3(len(DATA), b64(HASH), io.BytesIO(DATA)))._put_urls(block) == [None]
    other_size = [Block(HASH, len(DATA) + 1, "us-west-2")]
    assert _files(FakeS3(len(DATA), b64(HASH), io.BytesIO(DATA)))._put_urls(other_size) == [None]


def test_a_page_not_checked_in_time_is_asked_again(monkeypatch):
    monkeypatch.setattr("hycloud_core.fs.coded.URL_CHECK_BUDGET_S", -1.0)
    with pytest.raises(HyCloudError) as refused:
        _files(Empty())._put_urls([Block(HASH, len(DATA), "us-west-2")])
    assert refused.value.status == 503
    # an expected "later": the answer's Retry-After makes a client wait and ask again, and the
    # controller does not log it as a failure
    assert refused.value.retry_after >= 1
