"""The coded blocks in every instance's bucket, addressed by region and block sha256 (codec/layout.py)."""

from __future__ import annotations

import base64
import hashlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from botocore.exceptions import ClientError, IncompleteReadError, ResponseStreamingError
from urllib3.exceptions import ProtocolError

from .. import reach
from ..codec.layout import BLOCK_PREFIX, block_key
from ..instances import Instance

_ABSENT = ("404", "NoSuchKey", "NotFound")
DELETE_BATCH = 1000  # S3 DeleteObjects' limit
BROKEN_READ = (IncompleteReadError, ResponseStreamingError, ProtocolError)  # a body cut short

ABSENT, STORED, OTHER = "absent", "stored", "other"  # what a block key holds (BlockStore.state)


def b64(hex_hash: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_hash)).decode()


def _found(answer: dict[str, Any], operation: str) -> bool:
    """Whether a raw answer of the reach function found the block (200) or not (404); else an error.
    A body cut short counts as not found: a holder whose bytes cannot be read whole is no source."""
    if answer.get("broken"):
        return False
    if "error" in answer:
        raise reach.ReachError(message=answer["error"])
    status = int(answer["status"])
    if status not in (200, 404):
        raise ClientError({"Error": {"Code": str(status), "Message": f"{operation} of a block"}}, operation)
    return status == 200


def _judged(answer: dict[str, Any], block_hash: str, size: int) -> str:
    """state() from a HEAD's raw answer."""
    if not _found(answer, "HeadObject"):
        return ABSENT
    headers = {k.lower(): v for k, v in (answer.get("headers") or {}).items()}
    same = headers.get("content-length") == str(size) and headers.get("x-amz-checksum-sha256") == b64(
        block_hash
    )
    return STORED if same else OTHER


def _fitting(blocks: Sequence[tuple[str, int]]) -> Iterator[list[tuple[str, int]]]:
    """Consecutive batches whose sizes add up to at most reach.MAX_BODY (a larger one alone)."""
    batch: list[tuple[str, int]] = []
    total = 0
    for item in blocks:
        if batch and (total + item[1] > reach.MAX_BODY or len(batch) == reach.BATCH):
            yield batch
            batch, total = [], 0
        batch.append(item)
        total += item[1]
    if batch:
        yield batch


def _body_of(answer: dict[str, Any]) -> bytes | None:
    """get() from a GET's raw answer: its bytes, None when absent."""
    return base64.b64decode(answer.get("body") or "") if _found(answer, "GetObject") else None


class BlockStore:
    """`s3_for(region)`: an S3 client for that region's bucket."""

    def __init__(self, instances: list[Instance], s3_for: Callable[[str], Any], local: str = "") -> None:
        """`local`: the region the caller runs in; `crossed` counts block bytes to or from others."""
        self.s3_for = s3_for
        self.buckets = {i.region: i.bucket for i in instances}
        self.local, self.crossed = local, 0
        self._counting = threading.Lock()  # blocks move on several threads at once

    def _count(self, region: str, nbytes: int) -> None:
        if self.local and region != self.local:
            with self._counting:
                self.crossed += nbytes

    @property
    def regions(self) -> list[str]:
        return list(self.buckets)

    def has(self, region: str, block_hash: str, size: int) -> bool:
        """Stored with this size and the SHA-256 checksum S3 verified when it was written."""
        return self.state(region, block_hash, size) == STORED

    def state(self, region: str, block_hash: str, size: int) -> str:
        """ABSENT: no object at the block's key; STORED: one of this size whose SHA-256 checksum
        is the block's hash; OTHER: an object that is not that (another size, no checksum). An
        object that is there is never overwritten by an upload, whatever it holds."""
        try:
            head = self.s3_for(region).head_object(
                Bucket=self.buckets[region], Key=block_key(block_hash), ChecksumMode="ENABLED"
            )
        except ClientError as err:
            if err.response.get("Error", {}).get("Code") in _ABSENT:
                return ABSENT
            raise
        same = head.get("ContentLength") == size and head.get("ChecksumSHA256") == b64(block_hash)
        return STORED if same else OTHER

    def carried(self, region: str) -> bool:
        """Whether the reach function carries this region's calls (states() then asks in one go)."""
        return reach.carried(self.s3_for(region))

    def states(self, region: str, blocks: Sequence[tuple[str, int]]) -> list[str]:
        """state() of many (hash, size) of one region; through the reach function, one call for
        them all (reach.send_all) instead of an invocation per HEAD."""
        client = self.s3_for(region)
        if not reach.carried(client):
            return [self.state(region, h, size) for h, size in blocks]
        heads = [
            reach.signed(
                client,
                "head_object",
                {"Bucket": self.buckets[region], "Key": block_key(h), "ChecksumMode": "ENABLED"},
            )
            for h, _ in blocks
        ]
        return [
            _judged(a, h, size) for a, (h, size) in zip(reach.send_all(client, heads), blocks, strict=True)
        ]

    def verified(self, region: str, block_hash: str, size: int) -> bool:
        """The block's bytes read back whole hash to its name. Metadata alone is not proof: a store
        can report the size and checksum of an object whose bytes were lost or damaged since."""
        if not self.has(region, block_hash, size):
            return False
        try:
            data = self.get(region, block_hash)
        except BROKEN_READ:
            return False
        return data is not None and len(data) == size and hashlib.sha256(data).hexdigest() == block_hash

    def get(self, region: str, block_hash: str) -> bytes | None:
        try:
            body = self.s3_for(region).get_object(Bucket=self.buckets[region], Key=block_key(block_hash))
        except ClientError as err:
            if err.response.get("Error", {}).get("Code") in _ABSENT:
                return None
            raise
        data: bytes = body["Body"].read()
        self._count(region, len(data))
        return data

    def get_many(self, region: str, blocks: Sequence[tuple[str, int]]) -> list[bytes | None]:
        """get() of many (hash, size) of one region. Through the reach function a call carries as
        many as fit its payload (reach.MAX_BODY), sent together; directly, one after another."""
        client = self.s3_for(region)
        if not reach.carried(client):
            return [self.get(region, h) for h, _ in blocks]
        found: list[bytes | None] = []
        for batch in _fitting(blocks):
            gets = [
                reach.signed(client, "get_object", {"Bucket": self.buckets[region], "Key": block_key(h)})
                for h, _ in batch
            ]
            for answer in reach.send_all(client, gets):
                found.append(_body_of(answer))
        self._count(region, sum(len(d) for d in found if d))
        return found

    def read_range(self, region: str, block_hash: str, offset: int, length: int) -> bytes:
        body = self.s3_for(region).get_object(
            Bucket=self.buckets[region],
            Key=block_key(block_hash),
            Range=f"bytes={offset}-{offset + length - 1}",
        )
        data: bytes = body["Body"].read()
        return data

    def put(self, region: str, block_hash: str, data: bytes) -> None:
        self._count(region, len(data))
        self.s3_for(region).put_object(
            Bucket=self.buckets[region], Key=block_key(block_hash), Body=data, ChecksumSHA256=b64(block_hash)
        )

    def delete_many(self, region: str, block_hashes: Sequence[str]) -> None:
        """Delete blocks of one region by DeleteObjects, up to S3's 1,000 keys per request: one
        request (and, from inside the VPC, one reach call) per thousand, not one per block."""
        client = self.s3_for(region)
        for at in range(0, len(block_hashes), DELETE_BATCH):
            keys = [{"Key": block_key(h)} for h in block_hashes[at : at + DELETE_BATCH]]
            answer = client.delete_objects(
                Bucket=self.buckets[region], Delete={"Objects": keys, "Quiet": True}
            )
            if answer.get("Errors"):
                first = answer["Errors"][0]
                raise RuntimeError(f"{len(answer['Errors'])} block(s) not deleted in {region}: {first}")

    def listed(self, region: str) -> Iterator[tuple[str, float]]:
        """(block hash, time written) of every block in the region's bucket."""
        pages = (
            self.s3_for(region)
            .get_paginator("list_objects_v2")
            .paginate(Bucket=self.buckets[region], Prefix=BLOCK_PREFIX)
        )
        for page in pages:
            for obj in page.get("Contents", []):
                yield obj["Key"][len(BLOCK_PREFIX) :], obj["LastModified"].timestamp()

    def presigned(self, region: str, block_hash: str, method: str, ttl_s: int) -> str:
        params = {"Bucket": self.buckets[region], "Key": block_key(block_hash)}
        if method == "put_object":
            params["ChecksumSHA256"] = b64(block_hash)
        url: str = self.s3_for(region).generate_presigned_url(method, ExpiresIn=ttl_s, Params=params)
        return url
