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
from dataclasses import replace
from typing import Annotated

from annotated_types import Ge, Le
from answers import BINARY_BODY, BYTES, Entry, Job, ok, replies
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from bodies import raw_body
from context import CONFIG, filesystem, namespace, objects, records, s3, user
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
from polling import long_poll
from pydantic import BaseModel
from services import delta_jobs, optimal_instance
from services.coded_files import coded_version
from services.job_runs import RunOptions, Staging, delta_bytes, describe, owned, report, run

from hycloud_core import content, jobs, paths
from hycloud_core.delta import level as zlevel
from hycloud_core.errors import BadRequestError, ConflictError, PayloadTooLargeError
from hycloud_core.fs.relay_cache import RelayCache
from hycloud_core.instances import Instance
from hycloud_core.jobs.ledger import JobLedger
from hycloud_core.jobs.specs import DeltaDownloadSpec, DeltaSpec, DeltaUploadSpec, Source
from hycloud_core.presigned import MAX_URL_TTL_S

router = APIGatewayRouter()
MAX_BODY = 4 * 1024 * 1024  # base64 of the body must fit Lambda's 6 MB request limit
URL_TTL_S = MAX_URL_TTL_S  # staging PUTs and delta GETs; the client asks again when expired
DIRECT_URL_TTL_S = 300  # a direct job starts within its request
START_WAIT_S = 5.0  # the longest a request starting a job waits for its result
DIRECT_COMPRESS_S = START_WAIT_S  # a direct job's estimated compression at its level, at most
# a delta up to this size comes inline with the job's result, saving the client a request; no
# larger: the idempotency store keeps the answer in one DynamoDB item (400 KB, base64 of 256 KiB
# is 341 KB)
INLINE_DELTA = 256 * 1024
# the zstd level a client asks for a version-aware delta; run as level.cap allows (CPU budget)
Level = Annotated[int, Ge(zlevel.MIN_LEVEL), Le(zlevel.MAX_LEVEL)]


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


def _start(
    key: str,
    spec: DeltaSpec,
    size: int,
    staging: Staging | None = None,
    wait: float = 0,
    extra: dict | None = None,
    at: Instance | None = None,
) -> Response:
    """Start (or find) the job `key` computing `spec`; its result (200) when it ends within `wait`
    seconds (at most START_WAIT_S), which saves the client a round trip on short jobs, else 202.
    A caller willing to wait has a short job with nothing to fetch run in its request (direct).
    `staging`: what the request brought for the job; `at`: the data instance the job runs at (a
    coded file, services/optimal_instance.py), `spec` made for it."""
    direct = None
    if at is None:  # the home cache and the home function: nothing to look at for a data instance
        spec = delta_jobs.cached(spec)
        direct = CONFIG.delta_function if wait > 0 and _runs_direct(spec, size) else None
    if direct and isinstance(spec, DeltaDownloadSpec):
        spec = _new_version_url(spec)
    options = RunOptions(
        CONFIG.delta_state_machine,
        at=at.delta_state_machine if at else None,
        size=delta_bytes(spec, size),
        direct=direct,
        staging=staging,
    )
    job = run(router, key, spec, options)
    state = long_poll(lambda: _report(job), min(wait, START_WAIT_S), lambda r: r["state"] == "running")
    return ok({"job": job, **state, **(extra or {})}, 202 if state["state"] == "running" else 200)


def _runs_direct(spec: DeltaSpec, size: int) -> bool:
    """Whether the job is one Lambda task (nothing to fetch first) short enough to run in the request
    (a high zstd level's estimated compression too: a level-19 delta of 35 MB outlasts the request)."""
    needs_base = isinstance(spec, DeltaUploadSpec) or spec.base_hash
    level = (
        spec.level if isinstance(spec, DeltaDownloadSpec) and spec.level is not None else zlevel.DEFAULT_LEVEL
    )
    compress_s = size / zlevel.cost(level, zlevel.DEFAULT_TABLE).rate
    return (
        bool(CONFIG.delta_function)
        and size <= CONFIG.delta_direct_bytes
        and compress_s <= DIRECT_COMPRESS_S
        and (not needs_base or spec.base_cached)
    )


def _new_version_url(spec: DeltaDownloadSpec) -> DeltaDownloadSpec:
    """A short-lived GET URL of the version a direct encode job reads when it is not in the relay
    cache: the function fetches it with plain HTTP instead of loading boto3 at its cold start.
    Never for queued jobs (the URL would age in the queue) nor coded files (no single object)."""
    if spec.source.erasure_ref or RelayCache(CONFIG.cache_dir).is_ready(spec.cache_name, spec.content_hash):
        return spec
    url = s3().generate_presigned_url(
        "get_object",
        ExpiresIn=DIRECT_URL_TTL_S,
        Params={"Bucket": CONFIG.bucket, "Key": content.object_key(spec.content_hash)},
    )
    return replace(spec, new_url=url)


def _machine(job: str) -> str | None:
    """The workflow that ran the job's attempt when not the home one (a data instance's)."""
    record = JobLedger(records().table, user(router)).get(jobs.key_of(job))
    return record.machine if record else None


def _report(job: str, inline: bool = True) -> dict:
    """The job's state as the caller sees it: a delta too large for the API as a presigned S3 URL;
    with `inline`, a small delta in the answer itself, saving a request. A job at a data instance
    always leaves its delta in that instance's bucket: the URL names it there."""
    machine = _machine(job)
    state = report(describe(machine or CONFIG.delta_state_machine, job))
    result = state.get("result") or {}
    key = result.pop("delta_key", None)
    if key and machine:  # at a data instance (gone from the ring since: the next request runs it anew)
        at = optimal_instance.instance_of(machine)
        if at is not None:
            result["delta_url"] = optimal_instance.url(at, key)
    elif key:
        result["delta_url"] = s3().generate_presigned_url(
            "get_object", ExpiresIn=URL_TTL_S, Params={"Bucket": CONFIG.bucket, "Key": key}
        )
    elif inline and 0 < result.get("delta_size", 0) <= INLINE_DELTA:
        try:
            with open(jobs.staging_file(CONFIG.staging_dir, job, "delta"), "rb") as f:
                result["delta"] = base64.b64encode(f.read(INLINE_DELTA + 1)).decode()
        except FileNotFoundError:
            pass  # evicted: the client gets it through /v1/delta/data, which says so
    return state


def _body(limit: int = MAX_BODY) -> bytes:
    data = raw_body(router)
    if len(data) > limit:
        raise PayloadTooLargeError(f"at most {limit} bytes", code="delta-too-large")
    return data


def _readable_base(path: str, base: str) -> bool:
    """Whether the caller can read `base` through `path` and the cloud still holds it."""
    if base not in filesystem(router).readable_versions(path):
        return False
    return objects().is_stored(base) or bool(coded_version(namespace(router).current_link(path), base))


@router.post("/v1/delta/download", responses=replies((200, 202), Job, 404, 409))
def download_by_version(
    body: Annotated[DeltaByVersion, Body()],
    wait: Annotated[Wait, Query()] = 0,
    level: Annotated[Level | None, Query()] = None,
):
    path, base = paths.normalize(body.path), body.base_hash
    link = _large(path)
    file = {"file": {"content_hash": link.content_hash, "size": link.size}}  # no stat needed first
    if base == link.content_hash:
        return ok({"state": "same", "content_hash": base, **file})
    if not _readable_base(path, base):
        raise ConflictError(
            f"the cloud has no version of {path} with that hash; send a checksum list", code="base-unknown"
        )
    zl = zlevel.cap(level, link.size) if level is not None else zlevel.DEFAULT_LEVEL
    at = optimal_instance.instance_for(router, link)
    if at is not None:  # it leaves its delta in its own bucket (the controller cannot read its EFS)
        key, spec = delta_jobs.version_job(
            user(router),
            path,
            link.content_hash,
            base,
            optimal_instance.source(at, link.content_hash, link.erasure),
            zl,
        )
        spec = replace(spec, publish_delta=True, base_source=_remote_base(at, link, base))
        return _start(key, spec, link.size, wait=wait, extra=file, at=at)
    key, spec = delta_jobs.version_job(
        user(router), path, link.content_hash, base, delta_jobs.coded_source(link), zl
    )
    return _start(key, delta_jobs.with_coded_base(link, spec), link.size, wait=wait, extra=file)


def _remote_base(at: Instance, link, base: str) -> Source:
    """How a job at `at` fetches its base: rebuilt from its blocks when coded, else read from the
    home bucket."""
    erasure = coded_version(link, base)
    if erasure:
        return optimal_instance.source(at, base, erasure)
    return Source(
        bucket=CONFIG.bucket, bucket_region=s3().meta.region_name, table=optimal_instance.home_table()
    )


@router.put(
    "/v1/delta/download", responses=replies((200, 202), Job, 404, 409, 413), openapi_extensions=BINARY_BODY
)
def download_by_signature(
    path: Annotated[UserPath, Query()],
    staged: Annotated[ContentHash | None, Query()] = None,
    wait: Annotated[Wait, Query()] = 0,
):
    """The checksum list comes as the body or, when larger than one request, `staged` in S3."""
    path = paths.normalize(path)
    signature, staged_key, digest = _body_or_staged(staged)
    link = _large(path)
    key = jobs.job_key("dl", user(router), path, link.content_hash, "signature", digest.hex())
    spec = DeltaDownloadSpec(
        cache_name=paths.cache_name(user(router), path),
        content_hash=link.content_hash,
        staged_key=staged_key,
        staged_sha256=staged if staged_key else None,
    )
    at = optimal_instance.instance_for(router, link)
    if at is not None:  # the checksum list goes to that instance's bucket, as if staged there
        remote_key = staged_key or jobs.staged_key(user(router), digest.hex())
        source = optimal_instance.source(at, link.content_hash, link.erasure)
        spec = replace(
            spec, source=source, publish_delta=True, staged_key=remote_key, staged_sha256=digest.hex()
        )
        send = Staging(None if staged_key else signature, at=at, key=remote_key)
        return _start(key, spec, link.size, send, wait=wait, at=at)
    spec = replace(
        spec, source=delta_jobs.coded_source(link)
    )  # a coded file: the job rebuilds it from its blocks
    return _start(key, spec, link.size, None if staged_key else Staging(signature, "sig"), wait=wait)


@router.put(
    "/v1/delta/upload", responses=replies((200, 202), Job, 404, 409, 413), openapi_extensions=BINARY_BODY
)
def upload(
    path: Annotated[UserPath, Query()],
    base_hash: Annotated[ContentHash, Query()],
    content_hash: Annotated[ContentHash, Query()],
    staged: Annotated[ContentHash | None, Query()] = None,
    wait: Annotated[Wait, Query()] = 0,
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
    spec = DeltaUploadSpec(
        user=user(router),
        path=path,
        cache_name=paths.cache_name(user(router), path),  # where the base may be cached already
        content_hash=new,
        base_hash=base,
        base_cache_name=jobs.base_cache_name(base),
        staged_key=staged_key,
        staged_sha256=staged if staged_key else None,
    )
    spec = delta_jobs.with_coded_base(link, spec)  # the new version is stored plain
    return _start(key, spec, link.size, None if staged_key else Staging(delta, "delta"), wait=wait)


@router.get("/v1/delta/jobs", responses=replies(200, Job, 404))
def job_status(job_id: Annotated[JobId, Query(alias="id")], wait: Annotated[Wait, Query()] = 0):
    job = owned(router, job_id)
    state = long_poll(lambda: _report(job, inline=False), wait, lambda r: r["state"] == "running")
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
