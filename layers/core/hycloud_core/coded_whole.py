"""A coded file made whole where a plain large file would be read: one S3 object or one cache file.

Share links and the web app hand out one presigned URL, and delta jobs read their base version
from the relay cache; a coded file has neither, so the controller decodes it from k verified
blocks per chunk (`coded_reassemble`) as it streams: S3 gets it as a multipart upload completed
only when the content hash is right, the cache as a temporary file published only then.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from .coded_layout import CodedLayout
from .coded_reassemble import reassemble
from .errors import ConflictError, PayloadTooLargeError
from .fs.blocks import BlockStore
from .fs.relay_cache import RelayCache

PART = 8 * 1024 * 1024
# What one controller request decodes within API Gateway's 29 s (a few hundred MB/s locally and
# in-region); a larger coded file is refused with a clear error rather than a timeout.
MAX_INLINE_BYTES = 512 * 1024 * 1024


class _Multipart:
    """A write-only stream into an S3 multipart upload, one `PART` at a time."""

    def __init__(self, s3: Any, bucket: str, key: str) -> None:
        self.s3, self.bucket, self.key = s3, bucket, key
        self.upload = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
        self.buffer, self.parts = bytearray(), []

    def write(self, data: bytes) -> None:
        self.buffer += data
        while len(self.buffer) >= PART:
            self._send(bytes(self.buffer[:PART]))
            del self.buffer[:PART]

    def _send(self, body: bytes) -> None:
        number = len(self.parts) + 1
        part = self.s3.upload_part(
            Bucket=self.bucket, Key=self.key, UploadId=self.upload, PartNumber=number, Body=body
        )
        self.parts.append({"PartNumber": number, "ETag": part["ETag"]})

    def complete(self) -> None:
        if self.buffer or not self.parts:
            self._send(bytes(self.buffer))
        self.s3.complete_multipart_upload(
            Bucket=self.bucket, Key=self.key, UploadId=self.upload, MultipartUpload={"Parts": self.parts}
        )

    def abort(self) -> None:
        self.s3.abort_multipart_upload(Bucket=self.bucket, Key=self.key, UploadId=self.upload)


def _checked_size(size: int) -> None:
    if size > MAX_INLINE_BYTES:
        raise PayloadTooLargeError(
            f"a coded file over {MAX_INLINE_BYTES // 2**20} MiB cannot be made whole in one request; "
            "download it with the client",
            code="coded-too-large",
        )


def _verified(got: str, content_hash: str) -> None:
    if got != content_hash:
        raise ConflictError("the blocks do not make the file's content", code="blocks-lost")


def to_object(
    erasure: dict, content_hash: str, store: BlockStore, own: str, s3: Any, bucket: str, key: str
) -> None:
    """Decode the file into `bucket/key`, which exists afterwards only if its hash is right."""
    layout = CodedLayout.from_dict(erasure)
    _checked_size(sum(c.length for c in layout.chunks))
    out = _Multipart(s3, bucket, key)
    try:
        got, _ = reassemble(layout, store, own, out)
        _verified(got, content_hash)
        out.complete()
    except BaseException:
        out.abort()
        raise


def to_cache(
    erasure: dict, content_hash: str, store: BlockStore, own: str, cache: RelayCache, name: str
) -> None:
    """Decode the file into the relay cache as `name` (what a delta job reads as its base)."""
    layout = CodedLayout.from_dict(erasure)
    _checked_size(sum(c.length for c in layout.chunks))
    fd, tmp = tempfile.mkstemp(prefix=".hc-tmp-", dir=cache.dir)
    try:
        with os.fdopen(fd, "wb") as out:
            got, _ = reassemble(layout, store, own, out)
        _verified(got, content_hash)
        cache.publish(name, tmp, got)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
