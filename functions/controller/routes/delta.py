"""Delta download and delta upload jobs (seed 000 §III-B, plus version-aware deltas).

Download: the client names the version it holds by content hash; when the cloud still has it,
the job computes a version-aware delta, otherwise the client sends its checksum list and gets
an rsync-style delta. Upload: the client sends a delta against a base the cloud has; the job
patches, verifies and links the new version. Job ids come from the request (idempotent), and a
job's files are readable only by the user who started it.
"""

from __future__ import annotations

import json
import os
from typing import Annotated

from answers import BINARY_BODY, BYTES, Entry, Job, replies
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import CONFIG, filesystem, long_poll, namespace, objects, ok, raw_body, sfn, user
from models import ChunkState, ContentHash, DeltaByVersion, JobId, Length, Offset, UserPath, Wait

from hycloud_core import jobs, paths
from hycloud_core.errors import ConflictError, NotFoundError, PayloadTooLargeError
from hycloud_core.relay import execution_arn

router = APIGatewayRouter()
MAX_BODY = 4 * 1024 * 1024  # base64 of the body must fit Lambda's 6 MB request limit


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


def _start(job: str, spec: dict) -> Response:
    _stage(job, "owner", user(router).encode())
    try:
        sfn().start_execution(
            stateMachineArn=CONFIG.delta_state_machine, name=job, input=json.dumps({"job": job, **spec})
        )
    except sfn().exceptions.ExecutionAlreadyExists:
        pass  # the same request again: one job
    return ok({"job": job, "state": "running"}, 202)


def _own(job: str) -> str:
    job = jobs.checked_job_id(job)
    try:
        with open(jobs.staging_file(CONFIG.staging_dir, job, "owner"), "rb") as f:
            if f.read().decode() == user(router):
                return job
    except FileNotFoundError:
        pass
    raise NotFoundError("no such delta job", code="no-such-job")


def _body(limit: int = MAX_BODY) -> bytes:
    data = raw_body(router)
    if len(data) > limit:
        raise PayloadTooLargeError(f"at most {limit} bytes", code="delta-too-large")
    return data


@router.post("/v1/delta/download", responses=replies(202, Job, 404, 409))
def download_by_version(body: Annotated[DeltaByVersion, Body()]):
    path, base = paths.normalize(body.path), body.base_hash
    link = _large(path)
    if base == link.content_hash:
        return ok({"state": "same", "content_hash": base})
    if not objects().is_stored(base):
        raise ConflictError("the cloud no longer has that version; send a checksum list", code="base-unknown")
    job = jobs.job_id("dl", user(router), path, link.content_hash, base)
    return _start(
        job,
        {
            "action": "encode",
            "cache_name": paths.cache_name(user(router), path),
            "content_hash": link.content_hash,
            "base_hash": base,
            "base_cache_name": jobs.base_cache_name(base),
        },
    )


@router.put("/v1/delta/download", responses=replies(202, Job, 404, 409, 413), openapi_extensions=BINARY_BODY)
def download_by_signature(path: Annotated[UserPath, Query()]):
    path = paths.normalize(path)
    signature = _body()
    link = _large(path)
    job = jobs.job_id("dl", user(router), path, link.content_hash, "", signature)
    _stage(job, "sig", signature)
    return _start(
        job,
        {
            "action": "encode",
            "cache_name": paths.cache_name(user(router), path),
            "content_hash": link.content_hash,
        },
    )


@router.put("/v1/delta/upload", responses=replies(202, Job, 404, 409, 413), openapi_extensions=BINARY_BODY)
def upload(
    path: Annotated[UserPath, Query()],
    base_hash: Annotated[ContentHash, Query()],
    content_hash: Annotated[ContentHash, Query()],
):
    path, base, new = paths.normalize(path), base_hash, content_hash
    delta = _body()
    namespace(router).require_dir(paths.parent(path))
    if not objects().is_stored(base):
        raise ConflictError("the cloud no longer has the base version; upload directly", code="base-unknown")
    job = jobs.job_id("ul", user(router), path, new, base, delta)
    _stage(job, "delta", delta)
    return _start(
        job,
        {
            "action": "apply",
            "user": user(router),
            "path": path,
            "content_hash": new,
            "base_hash": base,
            "base_cache_name": jobs.base_cache_name(base),
        },
    )


@router.get("/v1/delta/jobs", responses=replies(200, Job, 404))
def job_status(job_id: Annotated[JobId, Query(alias="id")], wait: Annotated[Wait, Query()] = 0):
    job = _own(job_id)
    arn = execution_arn(CONFIG.delta_state_machine, job)
    try:
        desc = long_poll(
            lambda: sfn().describe_execution(executionArn=arn),
            wait,
            lambda d: d["status"] == "RUNNING",
        )
    except sfn().exceptions.ExecutionDoesNotExist:
        raise NotFoundError("no such delta job", code="no-such-job") from None
    if desc["status"] == "RUNNING":
        return ok({"job": job, "state": "running"})
    if desc["status"] == "SUCCEEDED":
        return ok({"job": job, "state": "ready", "result": json.loads(desc.get("output") or "{}")})
    return ok(
        {
            "job": job,
            "state": "failed",
            "error": desc.get("error") or desc["status"],
            "cause": (desc.get("cause") or "")[:500],
        }
    )


@router.get("/v1/delta/data", responses=replies(200, None, 404, 409, content=BYTES))
def job_data(
    job_id: Annotated[JobId, Query(alias="id")],
    offset: Annotated[Offset, Query()],
    length: Annotated[Length, Query()],
):
    job = _own(job_id)
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
