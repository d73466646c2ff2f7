"""A write-only stream into one S3 object that appears only when the writer says it is right.

A job that makes a file (a patched version, a coded file made whole) knows its content hash only
at the end, yet should not wait until then to start storing it: parts go up in the background
while the writer goes on, and the object is completed (or abandoned) once the hash is checked.
A file smaller than one part is one PUT at the end. Every part carries its SHA-256 checksum, which
S3 checks on arrival and keeps: with 8 MiB parts the object's composite checksum is its content
hash (`content.py`), so a reader can ask S3 what a key holds (`cached_copies.holds`).
"""

from __future__ import annotations

import base64
import hashlib
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from ..content import PART_SIZE, b64, hash_from_parts

PART = 8 * 1024 * 1024
IN_FLIGHT = 4  # parts uploading at once; memory is about (IN_FLIGHT + 1) parts


class ObjectWriter:
    def __init__(self, s3: Any, bucket: str, key: str, part: int = PART, in_flight: int = IN_FLIGHT) -> None:
        self.s3, self.bucket, self.key, self.part, self.in_flight = s3, bucket, key, part, in_flight
        self.upload: str | None = None
        self.buffer = bytearray()
        self.parts: list[Future[dict[str, Any]]] = []
        self.pool: ThreadPoolExecutor | None = None
        self._tail: tuple[int, bytes] | None = None

    def write(self, data: bytes) -> int:
        self.buffer += data
        while len(self.buffer) >= self.part:
            self._send(bytes(self.buffer[: self.part]))
            del self.buffer[: self.part]
        return len(data)

    def _send(self, body: bytes) -> None:
        if self.upload is None:
            self.upload = self.s3.create_multipart_upload(
                Bucket=self.bucket, Key=self.key, ChecksumAlgorithm="SHA256"
            )["UploadId"]
            self.pool = ThreadPoolExecutor(self.in_flight, thread_name_prefix="part")
        assert self.pool is not None  # made with the upload
        pending = {f for f in self.parts if not f.done()}
        while len(pending) >= self.in_flight:
            _, pending = wait(pending, return_when=FIRST_COMPLETED)
        self.parts.append(self.pool.submit(self._put, len(self.parts) + 1, body))

    def _put(self, number: int, body: bytes) -> dict[str, Any]:
        checksum = b64(hashlib.sha256(body).digest())
        part = self.s3.upload_part(
            Bucket=self.bucket,
            Key=self.key,
            UploadId=self.upload,
            PartNumber=number,
            Body=body,
            ChecksumSHA256=checksum,
        )
        return {"PartNumber": number, "ETag": part["ETag"], "ChecksumSHA256": checksum}

    def content_hash(self) -> str:
        """The content hash of what was written so far, from the parts' own checksums (each the
        sha256 of an 8 MiB part, which is what the hash is made of): no pass over the bytes of its
        own. Waits for the parts in flight and raises what their upload raised."""
        assert self.part == PART_SIZE, "parts of another size make another hash"
        digests = [base64.b64decode(f.result()["ChecksumSHA256"]) for f in self.parts]
        if self.buffer or not digests:
            digests.append(self._tail_digest())
        return hash_from_parts(digests)

    def _tail_digest(self) -> bytes:
        """The sha256 of the bytes not yet sent (at most a part), kept while they stay the same."""
        if self._tail is None or self._tail[0] != len(self.buffer):
            self._tail = (len(self.buffer), hashlib.sha256(self.buffer).digest())
        return self._tail[1]

    def complete(self) -> None:
        """Make the object readable: everything written, and nothing else."""
        if self.upload is None:
            body = bytes(self.buffer)
            checksum = b64(self._tail_digest())
            self.s3.put_object(Bucket=self.bucket, Key=self.key, Body=body, ChecksumSHA256=checksum)
            return
        if self.buffer:
            self._send(bytes(self.buffer))
        parts = [f.result() for f in self._finished(self.parts)]
        self.s3.complete_multipart_upload(
            Bucket=self.bucket, Key=self.key, UploadId=self.upload, MultipartUpload={"Parts": parts}
        )

    def abort(self) -> None:
        """Leave no object and no parts behind."""
        if self.upload is not None:
            self._finished([f for f in self.parts if not f.cancel()])
            self.s3.abort_multipart_upload(Bucket=self.bucket, Key=self.key, UploadId=self.upload)

    def _finished(self, futures: list[Future[dict[str, Any]]]) -> list[Future[dict[str, Any]]]:
        wait(futures)
        if self.pool is not None:  # made with the upload, which every caller checked
            self.pool.shutdown()
        return futures
