"""The object writer stores exactly what was written, and nothing until it is completed."""

from __future__ import annotations

import os

import boto3
import pytest
from moto import mock_aws

from hycloud_core.store.multipart import ObjectWriter

MiB = 1024 * 1024
BUCKET = "writer-test"


@pytest.fixture
def s3(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        client = boto3.client("s3")
        client.create_bucket(Bucket=BUCKET)
        yield client


def _write(writer: ObjectWriter, data: bytes, piece: int = 777_777) -> None:
    for i in range(0, len(data), piece):
        writer.write(data[i : i + piece])


def _keys(s3) -> list[str]:
    return [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]


@pytest.mark.parametrize("size", [0, 3 * MiB, 5 * MiB, 17 * MiB + 3])
def test_a_completed_object_is_every_byte_written(s3, size):
    data = os.urandom(size)
    writer = ObjectWriter(s3, BUCKET, "k", part=5 * MiB, in_flight=2)
    _write(writer, data)
    assert _keys(s3) == []  # nothing readable before complete
    writer.complete()
    assert s3.get_object(Bucket=BUCKET, Key="k")["Body"].read() == data


def test_an_aborted_object_leaves_no_object_and_no_parts(s3):
    writer = ObjectWriter(s3, BUCKET, "k", part=5 * MiB, in_flight=2)
    _write(writer, os.urandom(16 * MiB))
    writer.abort()
    assert _keys(s3) == []
    assert s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads", []) == []


@pytest.mark.parametrize("size", [0, 3 * MiB, 8 * MiB, 17 * MiB + 3])
def test_the_content_hash_comes_from_the_parts_checksums_before_anything_is_readable(s3, size):
    from hycloud_core import content

    data = os.urandom(size)
    writer = ObjectWriter(s3, BUCKET, "k", in_flight=2)
    _write(writer, data, piece=3 * MiB + 1)
    assert writer.content_hash() == content.hash_bytes(data)
    assert _keys(s3) == []  # the hash is known before the object is there to be read
    writer.complete()
    assert s3.get_object(Bucket=BUCKET, Key="k")["Body"].read() == data


def test_parts_of_another_size_give_no_content_hash(s3):
    writer = ObjectWriter(s3, BUCKET, "k", part=5 * MiB)
    writer.write(b"x")
    with pytest.raises(AssertionError):
        writer.content_hash()
