"""What delta jobs read and leave in staging: checksum lists and deltas a client staged in S3
(presigned PUTs, checked by their sha256, so the name can be trusted by the job), and the delta
a job wrote to its staging file on EFS, read back inline or piece by piece."""

from __future__ import annotations

import base64

from context import CONFIG, s3

from hycloud_core import jobs
from hycloud_core.errors import ConflictError
from hycloud_core.presigned import MAX_URL_TTL_S

URL_TTL_S = MAX_URL_TTL_S  # staging PUTs and delta GETs; the client asks again when expired


def upload_url(caller: str, sha256: str) -> str:
    """A presigned PUT for a checksum list or delta too large for one API request; S3 refuses
    any body whose sha256 is not the one named."""
    return str(
        s3().generate_presigned_url(
            "put_object",
            ExpiresIn=URL_TTL_S,
            Params={
                "Bucket": CONFIG.bucket,
                "Key": jobs.staged_key(caller, sha256),
                "ChecksumSHA256": base64.b64encode(bytes.fromhex(sha256)).decode(),
            },
        )
    )


def staged_key(caller: str, digest: str) -> str:
    """The S3 key of what the caller staged under `digest`; 409 until it is there."""
    key = jobs.staged_key(caller, digest)
    try:
        s3().head_object(Bucket=CONFIG.bucket, Key=key)
    except s3().exceptions.ClientError:
        raise ConflictError("nothing staged under that sha256; PUT it first", code="not-staged") from None
    return key


def download_url(key: str) -> str:
    """A presigned GET of a delta a job left in the home bucket."""
    return str(
        s3().generate_presigned_url(
            "get_object", ExpiresIn=URL_TTL_S, Params={"Bucket": CONFIG.bucket, "Key": key}
        )
    )


def read_delta(job: str, limit: int) -> bytes | None:
    """Up to `limit` + 1 bytes of the job's delta (so a caller sees one too long), when its staging
    file is still there (None when evicted: the client gets it through /v1/delta/data, which says so)."""
    try:
        with open(jobs.staging_file(CONFIG.staging_dir, job, "delta"), "rb") as f:
            return f.read(limit + 1)
    except FileNotFoundError:
        return None


def inline_delta(job: str, limit: int) -> str | None:
    """The job's delta, base64 (read_delta)."""
    data = read_delta(job, limit)
    return None if data is None else base64.b64encode(data).decode()


def delta_piece(job: str, offset: int, length: int) -> bytes:
    """`length` bytes of the job's delta from `offset`; 409 while it has none."""
    try:
        with open(jobs.staging_file(CONFIG.staging_dir, job, "delta"), "rb") as f:
            f.seek(offset)
            return f.read(length)
    except FileNotFoundError:
        raise ConflictError("the job has no delta (yet)", code="job-not-ready") from None
