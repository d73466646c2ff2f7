"""`HyCloud.open`: random-access ranged reads equal the local bytes; writes upload on close."""

from __future__ import annotations

import hashlib
import io
import random
import time

import pytest

from hycloud_core import content
from hycloud_core.errors import HyCloudError, NotFoundError

MiB = 1024 * 1024
LARGE = 9 * MiB + 12345  # two S3 parts, above the small-file threshold


@pytest.fixture(scope="module")
def large(alice, tmp_path_factory):
    data = random.Random(14).randbytes(LARGE)
    local = tmp_path_factory.mktemp("fo") / "large.bin"
    local.write_bytes(data)
    client = alice.sdk()
    client.put(local, "/fo/large.bin", parents=True)
    assert client.stat("/fo/large.bin")["storage"] == "large"
    return client, data


def test_random_access_reads_equal_local_slices(large):
    client, data = large
    rng = random.Random(7)
    spots = [(0, 100), (LARGE - 10, 10), (8 * MiB - 3, 7), (LARGE - 5, 50), (LARGE + 10, 4)]
    spots += [(rng.randrange(LARGE), rng.randrange(1, 3 * MiB)) for _ in range(12)]
    with client.open("/fo/large.bin", "rb") as f:
        assert f.seekable() and f.seek(0, io.SEEK_END) == LARGE
        for offset, length in spots:
            f.seek(offset)
            assert f.read(length) == data[offset : offset + length], (offset, length)
            assert f.tell() == min(offset + length, max(offset, LARGE)) or offset > LARGE
        f.seek(-20, io.SEEK_END)
        assert f.read() == data[-20:]


def test_sequential_read_of_whole_file(large):
    client, data = large
    with client.open("/fo/large.bin", "rb") as f:
        chunks = iter(lambda: f.read(300_000), b"")
        assert hashlib.sha256(b"".join(chunks)).digest() == hashlib.sha256(data).digest()


def test_in_order_read_of_altered_object_fails_on_hash(large, deployment):
    """The S3 object behind the file swapped for other bytes of the same size: caught at the end."""
    client, data = large
    s3, bucket = deployment.client("s3"), deployment.outputs["BucketName"]
    key = content.object_key(content.hash_bytes(data))
    altered = bytearray(data)
    altered[5 * MiB] ^= 0xFF
    s3.put_object(Bucket=bucket, Key=key, Body=bytes(altered))
    try:
        with client.open("/fo/large.bin", "rb") as f, pytest.raises(HyCloudError) as err:
            while f.read(MiB):
                pass
        assert err.value.code == "corrupt-download"
    finally:
        s3.put_object(Bucket=bucket, Key=key, Body=data)


def test_expired_url_is_fetched_again(large, deployment):
    client, data = large
    s3, bucket = deployment.client("s3"), deployment.outputs["BucketName"]
    key = content.object_key(content.hash_bytes(data))
    with client.open("/fo/large.bin", "rb", buffer_size=4096) as f:
        f.raw._link["url"] = s3.generate_presigned_url(
            "get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=1
        )
        time.sleep(2)
        f.seek(3 * MiB)
        assert f.read(1000) == data[3 * MiB : 3 * MiB + 1000]
        assert "Expires=1" not in f.raw._link["url"]


def test_small_file_reads_and_write_round_trip(large):
    client, _ = large
    text = "name,value\n" + "".join(f"row{i},{i * i}\n" for i in range(500))
    with client.open("/fo/dir/small.csv", "w", parents=True) as f:
        f.write(text)
    assert client.get_bytes("/fo/dir/small.csv") == text.encode()
    with client.open("/fo/dir/small.csv", "rb") as f:
        f.seek(11)
        assert f.read(9) == text.encode()[11:20]
    with client.open("/fo/dir/small.csv", "r") as f:
        assert f.readline() == "name,value\n"


def test_large_write_round_trip(large, tmp_path):
    client, _ = large
    data = random.Random(3).randbytes(3 * MiB + 7)
    with client.open("/fo/written.bin", "wb") as f:
        for i in range(0, len(data), 100_000):
            f.write(data[i : i + 100_000])
    info = client.stat("/fo/written.bin")
    assert info["storage"] == "large" and info["content_hash"] == content.hash_bytes(data)
    with client.open("/fo/written.bin", "rb") as f:
        assert f.read() == data


def test_write_abandoned_by_exception_uploads_nothing(large):
    client, _ = large
    with pytest.raises(RuntimeError), client.open("/fo/never.bin", "wb") as f:
        f.write(b"partial")
        raise RuntimeError("stop")
    with pytest.raises(NotFoundError):
        client.stat("/fo/never.bin")


def test_bad_mode_and_missing_file(large):
    client, _ = large
    with pytest.raises(HyCloudError) as err:
        client.open("/fo/large.bin", "ab")
    assert err.value.status == 400
    with pytest.raises(NotFoundError):
        client.open("/fo/missing.bin", "rb")
