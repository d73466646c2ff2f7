"""Large-file uploads: presigned multipart straight to S3, verified and committed by the controller.

Flow: `start` (idempotent: the same file again resumes the same multipart upload and says which
parts are there) → the client PUTs parts to presigned URLs, each carrying its SHA-256 checksum,
which S3 checks → `commit` verifies the part list against the declared digests and sizes,
completes the upload at the content-addressed key and records the object.

When the content is already stored (by anyone), no bytes are sent: the client proves it holds
the file by hashing a few random byte ranges the controller chose (proof of possession), so
knowing a hash is not enough to obtain someone else's content.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import secrets
import time
from typing import Any

from .. import content
from ..errors import BadRequestError, ConflictError, PayloadTooLargeError
from ..presigned import MAX_URL_TTL_S
from ..store.objects import Objects
from ..store.records import Records

URL_BATCH = 200
URL_TTL_S = MAX_URL_TTL_S  # a part's PUT; the client asks again when it expired
CHALLENGE_TTL_S = 3600  # how long a dedup challenge may be answered (no URL: not capped)
CHALLENGE_RANGES, CHALLENGE_LEN = 4, 64


def _digests(raw: Any, size: int) -> list[bytes]:
    if not isinstance(raw, list) or len(raw) != content.part_count(size):
        raise BadRequestError(
            f"need {content.part_count(size)} part digests for {size} bytes", code="bad-parts"
        )
    try:
        digests = [base64.b64decode(d, validate=True) for d in raw]
    except (binascii.Error, TypeError, ValueError):
        raise BadRequestError("part digests must be base64 SHA-256", code="bad-parts") from None
    if any(len(d) != 32 for d in digests):
        raise BadRequestError("part digests must be base64 SHA-256", code="bad-parts")
    return digests


class Uploads:
    def __init__(self, user: str, records: Records, objects: Objects, s3: Any, bucket: str) -> None:
        self.user, self.records, self.objects, self.s3, self.bucket = user, records, objects, s3, bucket

    def start(self, size: int, content_hash: str, part_digests: Any) -> dict[str, Any]:
        if not isinstance(size, int) or size < 0:
            raise BadRequestError("size must be a non-negative integer", code="bad-size")
        if content.part_count(size) > content.MAX_PARTS:
            raise PayloadTooLargeError(
                f"files above {content.MAX_PARTS} parts are not supported", code="too-large"
            )
        content.checked_hash(content_hash)
        digests = _digests(part_digests, size)
        if content.hash_from_parts(digests) != content_hash:
            raise BadRequestError("content hash does not match the part digests", code="hash-mismatch")
        if self.objects.is_stored(content_hash):
            return {
                "content_hash": content_hash,
                "dedup": True,
                "challenge": self._challenge(content_hash, size),
            }
        pending = self.records.get_upload(self.user, content_hash)
        if pending and pending.get("kind") == "multipart":
            done = self._parts_done(pending["upload_id"], content_hash)
        else:
            upload = self.s3.create_multipart_upload(
                Bucket=self.bucket, Key=content.object_key(content_hash), ChecksumAlgorithm="SHA256"
            )
            pending = {
                "kind": "multipart",
                "upload_id": upload["UploadId"],
                "size": size,
                "digests": [content.b64(d) for d in digests],
            }
            self.records.put_upload(self.user, content_hash, **pending)
            done = {}
        missing = [n for n in range(1, len(digests) + 1) if n not in done]
        return {
            "content_hash": content_hash,
            "dedup": False,
            "part_size": content.PART_SIZE,
            "parts_done": sorted(done),
            "missing": missing,
            "urls": self.urls(content_hash, missing[:URL_BATCH]),
        }

    def urls(self, content_hash: str, numbers: list[int]) -> dict[str, str]:
        pending = self._pending(content.checked_hash(content_hash))
        out = {}
        for n in numbers:
            if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= len(pending["digests"]):
                raise BadRequestError(f"no part {n} in this upload", code="bad-parts")
            out[str(n)] = self.s3.generate_presigned_url(
                "upload_part",
                ExpiresIn=URL_TTL_S,
                Params={
                    "Bucket": self.bucket,
                    "Key": content.object_key(content_hash),
                    "UploadId": pending["upload_id"],
                    "PartNumber": n,
                    "ChecksumSHA256": pending["digests"][n - 1],
                },
            )
        return out

    def abort(self, content_hash: str) -> None:
        pending = self._pending(content.checked_hash(content_hash))
        self.s3.abort_multipart_upload(
            Bucket=self.bucket, Key=content.object_key(content_hash), UploadId=pending["upload_id"]
        )
        self.records.delete_upload(self.user, content_hash)

    def finish(self, content_hash: str, proof: str | None) -> int:
        """Make the content stored and referenced once more; return its size."""
        pending = self.records.get_upload(self.user, content.checked_hash(content_hash))
        if pending and pending.get("kind") == "dedup":
            return self._finish_dedup(content_hash, pending, proof)
        if not pending:
            raise ConflictError("no upload of this content is in progress; start one", code="upload-required")
        self._complete(content_hash, pending)
        self.objects.create(content_hash, pending["size"])
        self.records.delete_upload(self.user, content_hash)
        if not self._stored(content_hash):  # completed while a twin was being reclaimed: upload again
            raise ConflictError("content was removed concurrently; upload again", code="upload-required")
        return int(pending["size"])

    # --- helpers ---------------------------------------------------------------------------
    def _pending(self, content_hash: str) -> dict[str, Any]:
        pending = self.records.get_upload(self.user, content_hash)
        if not pending or pending.get("kind") != "multipart":
            raise ConflictError("no upload of this content is in progress", code="upload-required")
        return pending

    def _parts_done(self, upload_id: str, content_hash: str) -> dict[int, dict[str, Any]]:
        parts, kwargs = (
            {},
            {"Bucket": self.bucket, "Key": content.object_key(content_hash), "UploadId": upload_id},
        )
        while True:
            page = self.s3.list_parts(**kwargs)
            parts.update({p["PartNumber"]: p for p in page.get("Parts", [])})
            if not page.get("IsTruncated"):
                return parts
            kwargs["PartNumberMarker"] = page["NextPartNumberMarker"]

    def _complete(self, content_hash: str, pending: dict[str, Any]) -> None:
        done = self._parts_done(pending["upload_id"], content_hash)
        size, digests = pending["size"], pending["digests"]
        missing = [n for n in range(1, len(digests) + 1) if n not in done]
        if missing:
            raise ConflictError(f"{len(missing)} parts not uploaded yet", code="upload-incomplete")
        for n, part in done.items():
            if n > len(digests) or part["Size"] != content.part_range(size, n)[1]:
                raise BadRequestError(f"part {n} does not have its expected size", code="hash-mismatch")
            if part.get("ChecksumSHA256", digests[n - 1]) != digests[n - 1]:
                raise BadRequestError(f"part {n} does not match its declared digest", code="hash-mismatch")
        key = content.object_key(content_hash)
        self.s3.complete_multipart_upload(
            Bucket=self.bucket,
            Key=key,
            UploadId=pending["upload_id"],
            MultipartUpload={
                "Parts": [
                    {"PartNumber": n, "ETag": done[n]["ETag"], "ChecksumSHA256": digests[n - 1]}
                    for n in sorted(done)
                ]
            },
        )
        if not all("ChecksumSHA256" in p for p in done.values()):
            self._verify_by_reading(key, content_hash)

    def _verify_by_reading(self, key: str, content_hash: str) -> None:
        """For stores that do not report part checksums: hash the completed object once."""
        hasher = content.PartHasher()
        for piece in self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].iter_chunks(1024 * 1024):
            hasher.update(piece)
        if hasher.hexdigest() != content_hash:
            self.s3.delete_object(Bucket=self.bucket, Key=key)
            raise BadRequestError("uploaded content does not match its hash", code="hash-mismatch")

    def _stored(self, content_hash: str) -> bool:
        try:
            self.s3.head_object(Bucket=self.bucket, Key=content.object_key(content_hash))
            return True
        except self.s3.exceptions.ClientError:
            return False

    def _challenge(self, content_hash: str, size: int) -> dict[str, Any]:
        nonce = secrets.token_hex(16)
        length = min(CHALLENGE_LEN, size)
        ranges = (
            [[secrets.randbelow(size - length + 1), length] for _ in range(CHALLENGE_RANGES)] if size else []
        )
        self.records.put_upload(
            self.user,
            content_hash,
            kind="dedup",
            nonce=nonce,
            ranges=ranges,
            size=size,
            expires=int(time.time()) + CHALLENGE_TTL_S,
        )
        return {"nonce": nonce, "ranges": ranges}

    def _finish_dedup(self, content_hash: str, pending: dict[str, Any], proof: str | None) -> int:
        self.records.delete_upload(self.user, content_hash)  # one answer per challenge
        if pending["expires"] < time.time():
            raise ConflictError("the dedup challenge expired; start again", code="upload-required")
        expected = content.possession_proof(
            pending["nonce"], [self._read_range(content_hash, o, n) for o, n in pending["ranges"]]
        )
        if not isinstance(proof, str) or not hmac.compare_digest(proof, expected):
            raise BadRequestError("proof of possession does not match the content", code="bad-proof")
        self.objects.require(content_hash)
        return int(pending["size"])

    def _read_range(self, content_hash: str, offset: int, length: int) -> bytes:
        body = self.s3.get_object(
            Bucket=self.bucket,
            Key=content.object_key(content_hash),
            Range=f"bytes={offset}-{offset + length - 1}",
        )["Body"]
        data: bytes = body.read()
        return data
