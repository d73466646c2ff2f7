"""Delta download and delta upload jobs (seed 000 §III-B, plus version-aware deltas).

Download: the client names the version it holds by content hash; when that is a version of the
path the caller can read (its current or a retained earlier one) the job computes a
version-aware delta, otherwise the client sends its checksum list and gets an rsync-style delta.
Upload: the client sends a delta against the path's current version (anything else is a 409);
the job patches, verifies and links the new version only if the path still holds that base.
Bases are only content the caller can read, and every refusal reads the same whatever the hash
names, so a job tells nobody anything about content that is not theirs. Jobs are keyed by what
they compute and the version they read (hycloud_core.jobs); a job's id is usable by its owner only.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Callable
from typing import Annotated

from answers import BINARY_BODY, BYTES, Entry, Job, replies
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import CONFIG, filesystem, long_poll, namespace, objects, ok, raw_body, s3, user
from models import (
    Body as JsonBody,
)
from models import (
    ByteCount,
    ChunkState,
    ContentHash,
    DeltaByVersion,
    JobId,
    Length,
    Offset,
    UserPath,
    Wait,
)
from pydantic import BaseModel

from hycloud_core import jobs, paths
from hycloud_core.errors import BadRequestError, ConflictError, PayloadTooLargeError

from .job_runner import describe, owned, report, run

router = APIGatewayRouter()
MAX_BODY = 4 * 1024 * 1024  # base64 of the body must fit Lambda's 6 MB request limit
URL_TTL_S = 3600


class StageRequest(JsonBody):
    sha256: ContentHash
    size: ByteCount


class Staged(BaseModel):
    staged: str
    url: str


@router.post("/v1/delta/staging", responses=replies(200, Staged, 413))
def stage_url(body: Annotated[StageRequest, Body()]):
    """A presigned PUT for a checksum list or delta too large for one API request; S3 refuses
    any body whose sha256 is not the one named, so the name can be trusted by the job."""
    if body.size > jobs.STAGED_MAX:
        raise PayloadTooLargeError(f"at most {jobs.STAGED_MAX} bytes", code="delta-too-large")
    url = s3().generate_presigned_url(
        "put_object",
        ExpiresIn=URL_TTL_S,
        Params={
            "Bucket": CONFIG.bucket,
            "Key": jobs.staged_key(user(router), body.sha256),
            "ChecksumSHA256": base64.b64encode(bytes.fromhex(body.sha256)).decode(),
        },
    )
    return ok({"staged": body.sha256, "url": url})


def _staged(digest: str) -> str:
    """The S3 key of what the caller staged under `digest`; 409 until it is there."""
    key = jobs.staged_key(user(router), digest)
    try:
        s3().head_object(Bucket=CONFIG.bucket, Key=key)
    except s3().exceptions.ClientError:
        raise ConflictError("nothing staged under that sha256; PUT it first", code="not-staged") from None
    return key


def _body_or_staged(staged: str | None) -> tuple[bytes, str | None, bytes]:
    """(body, staged key, digest): the bytes come in the request or were staged in S3 before."""
    if staged is None:
        data = _body()
        return data, None, hashlib.sha256(data).digest()
    if raw_body(router):
        raise BadRequestError("send the bytes in the body or stage them, not both", code="bad-body")
    return b"", _staged(staged), bytes.fromhex(staged)


def _large(path: str):
    link = namespace(router).current_link(path)
    if link is None:
        raise ConflictError(f"{path} is not a large file", code="not-a-large-file")
    return link


def _stage(job: str, suffix: str, data: bytes) -> None:
    os.makedirs(CONFIG.staging_dir, exist_ok=True)
    target = jobs.staging_file(CONFIG.staging_dir, job, suffix)
    with open(target + ".tmp", "wb") as f:
        f.write(data)
    os.replace(target + ".tmp", target)


def _delta_ready(job: str) -> bool:
    return os.path.exists(jobs.staging_file(CONFIG.staging_dir, job, "delta"))


def _no_staging(job: str) -> None:
    pass


def _start(
    key: str,
    spec: dict,
    alive: Callable[[str], bool] = _delta_ready,
    stage: Callable[[str], None] = _no_staging,
) -> Response:
    """Start (or find) the job `key` computing `spec`; 202 with its id."""
    job = run(router, CONFIG.delta_state_machine, key, spec, alive, stage)
    return ok({"job": job, "state": "running"}, 202)


def _body(limit: int = MAX_BODY) -> bytes:
    data = raw_body(router)
    if len(data) > limit:
        raise PayloadTooLargeError(f"at most {limit} bytes", code="delta-too-large")
    return data


def _readable_base(path: str, base: str) -> bool:
    """Whether the caller can read `base` through `path` and the cloud still holds it."""
    return base in filesystem(router).readable_versions(path) and objects().is_stored(base)


@router.post("/v1/delta/download", responses=replies((200, 202), Job, 404, 409))
def download_by_version(body: Annotated[DeltaByVersion, Body()]):
    path, base = paths.normalize(body.path), body.base_hash
    link = _large(path)
    if base == link.content_hash:
        return ok({"state": "same", "content_hash": base})
    if not _readable_base(path, base):
        raise ConflictError(
            f"the cloud has no version of {path} with that hash; send a checksum list", code="base-unknown"
        )
    key = jobs.job_key("dl", user(router), path, link.content_hash, "version", base)
    return _start(
        key,
        {
            "action": "encode",
            "cache_name": paths.cache_name(user(router), path),
            "content_hash": link.content_hash,
            "base_hash": base,
            "base_cache_name": jobs.base_cache_name(base),
        },
    )


@router.put("/v1/delta/download", responses=replies(202, Job, 404, 409, 413), openapi_extensions=BINARY_BODY)
def download_by_signature(
    path: Annotated[UserPath, Query()], staged: Annotated[ContentHash | None, Query()] = None
):
    """The checksum list comes as the body or, when larger than one request, `staged` in S3."""
    path = paths.normalize(path)
    signature, staged_key, digest = _body_or_staged(staged)
    link = _large(path)
    key = jobs.job_key("dl", user(router), path, link.content_hash, "signature", digest.hex())
    spec = {
        "action": "encode",
        "cache_name": paths.cache_name(user(router), path),
        "content_hash": link.content_hash,
        **({"staged_key": staged_key, "staged_sha256": staged} if staged_key else {}),
    }
    return _start(key, spec, stage=lambda job: staged_key or _stage(job, "sig", signature))


def _holds(path: str, content_hash: str) -> bool:
    link = namespace(router).current_link(path)
    return link is not None and link.content_hash == content_hash


@router.put("/v1/delta/upload", responses=replies(202, Job, 404, 409, 413), openapi_extensions=BINARY_BODY)
def upload(
    path: Annotated[UserPath, Query()],
    base_hash: Annotated[ContentHash, Query()],
    content_hash: Annotated[ContentHash, Query()],
    staged: Annotated[ContentHash | None, Query()] = None,
):
    """The delta comes as the body or, when larger than one request, `staged` in S3."""
    path, base, new = paths.normalize(path), base_hash, content_hash
    delta, staged_key, digest = _body_or_staged(staged)
    namespace(router).require_dir(paths.parent(path))
    link = namespace(router).current_link(path)
    if link is None or link.content_hash != base:
        raise ConflictError(
            f"{path} does not hold the base version; make the delta against its current version",
            code="version-mismatch",
        )
    key = jobs.job_key("ul", user(router), path, base, new, digest)
    spec = {
        "action": "apply",
        "user": user(router),
        "path": path,
        "content_hash": new,
        "base_hash": base,
        "base_cache_name": jobs.base_cache_name(base),
        **({"staged_key": staged_key, "staged_sha256": staged} if staged_key else {}),
    }
    return _start(
        key,
        spec,
        alive=lambda job: _holds(path, new),
        stage=lambda job: staged_key or _stage(job, "delta", delta),
    )


@router.get("/v1/delta/jobs", responses=replies(200, Job, 404))
def job_status(job_id: Annotated[JobId, Query(alias="id")], wait: Annotated[Wait, Query()] = 0):
    job = owned(router, job_id)
    state = long_poll(
        lambda: report(describe(CONFIG.delta_state_machine, job)),
        wait,
        lambda r: r["state"] == "running",
    )
    result = state.get("result") or {}
    if result.get("delta_key"):  # a delta too large for the API: fetched from S3 directly
        result["delta_url"] = s3().generate_presigned_url(
            "get_object",
            ExpiresIn=URL_TTL_S,
            Params={"Bucket": CONFIG.bucket, "Key": result.pop("delta_key")},
        )
    return ok({"job": job, **state})


@router.get("/v1/delta/data", responses=replies(200, None, 404, 409, content=BYTES))
def job_data(
    job_id: Annotated[JobId, Query(alias="id")],
    offset: Annotated[Offset, Query()],
    length: Annotated[Length, Query()],
):
    job = owned(router, job_id)
    try:
        with open(jobs.staging_file(CONFIG.staging_dir, job, "delta"), "rb") as f:
            f.seek(offset)
            piece = f.read(length)
    except FileNotFoundError:
        raise ConflictError("the job has no delta (yet)", code="job-not-ready") from None
    return Response(status_code=200, content_type="application/octet-stream", body=piece)


@router.post("/v1/files/chunking", responses=replies(200, Entry, 404, 409))
def set_chunking(body: Annotated[ChunkState, Body()]):
    """Store the client's adaptive chunk-size state in the file's link file (seed 000 §III-B)."""
    entry = filesystem(router).set_chunk_state(body.path, body.content_hash, body.chunk_size, body.state)
    return ok(entry.to_dict())
