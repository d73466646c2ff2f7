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

import hashlib
import json
from typing import Annotated

from annotated_types import Ge, Le
from answers import BINARY_BODY, BYTES, OCTET, Entry, Job, ok, replies
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from bodies import raw_body
from context import filesystem, user
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
from services import delta_runs, delta_staging
from services.delta_runs import Brought
from services.job_runs import owned

from hycloud_core import jobs, paths
from hycloud_core.delta import level as zlevel
from hycloud_core.errors import BadRequestError, PayloadTooLargeError

router = APIGatewayRouter()
_BY_VERSION = replies((200, 202), Job, 404, 409)
_BY_VERSION[200]["content"] = {**_BY_VERSION[200]["content"], **BYTES}
_BY_SIGNATURE = replies((200, 202), Job, 404, 409, 413)
_BY_SIGNATURE[200]["content"] = {**_BY_SIGNATURE[200]["content"], **BYTES}
MAX_BODY = 4 * 1024 * 1024  # base64 of the body must fit Lambda's 6 MB request limit
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
    return ok({"staged": body.sha256, "url": delta_staging.upload_url(user(router), body.sha256)})


def _brought(staged: str | None) -> Brought:
    """What the request brought: the bytes in its body or, `staged`, in S3 before (409 until there)."""
    if staged is None:
        data = _body()
        return Brought(data, hashlib.sha256(data).hexdigest())
    if raw_body(router):
        raise BadRequestError("send the bytes in the body or stage them, not both", code="bad-body")
    return Brought(b"", staged, delta_staging.staged_key(user(router), staged))


def _body(limit: int = MAX_BODY) -> bytes:
    data = raw_body(router)
    if len(data) > limit:
        raise PayloadTooLargeError(f"at most {limit} bytes", code="delta-too-large")
    return data


@router.post("/v1/delta/download", responses=_BY_VERSION)
def download_by_version(
    body: Annotated[DeltaByVersion, Body()],
    wait: Annotated[Wait, Query()] = 0,
    level: Annotated[Level | None, Query()] = None,
):
    """With `Accept: application/octet-stream`, a ready delta of up to 4 MiB is the answer's body
    and the rest of the answer (as JSON) its `x-hycloud-answer` header: one request and the delta's
    own bytes on the link, where a JSON answer carries only a delta of up to 256 KiB (base64)."""
    as_bytes = _accepts_bytes()
    answer, status = delta_runs.by_version(
        router, paths.normalize(body.path), body.base_hash, level, wait, inline=not as_bytes
    )
    return _answered(answer, status, as_bytes)


def _accepts_bytes() -> bool:
    return OCTET in (router.current_event.get_header_value("accept", default_value="") or "")


def _answered(answer: dict, status: int, as_bytes: bool) -> Response:
    """A ready job's delta as the body when the client takes bytes (the answer in a header), else JSON."""
    if as_bytes and (data := delta_runs.delta_body(answer)) is not None:
        header = json.dumps(answer, separators=(",", ":"))  # ASCII (json escapes the rest)
        return Response(status_code=200, content_type=OCTET, body=data, headers={jobs.ANSWER_HEADER: header})
    return ok(answer, status)


@router.put("/v1/delta/download", responses=_BY_SIGNATURE, openapi_extensions=BINARY_BODY)
def download_by_signature(
    path: Annotated[UserPath, Query()],
    staged: Annotated[ContentHash | None, Query()] = None,
    wait: Annotated[Wait, Query()] = 0,
):
    """The checksum list comes as the body or, when larger than one request, `staged` in S3. The
    answer names the path's current version (`file`: no stat needed first) and, to a client that
    accepts bytes, is the delta itself as POST's is."""
    path, as_bytes = paths.normalize(path), _accepts_bytes()
    answer, status = delta_runs.by_signature(router, path, _brought(staged), wait, inline=not as_bytes)
    return _answered(answer, status, as_bytes)


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
    path = paths.normalize(path)
    return ok(*delta_runs.upload(router, path, base_hash, content_hash, _brought(staged), wait))


@router.get("/v1/delta/jobs", responses=replies(200, Job, 404))
def job_status(job_id: Annotated[JobId, Query(alias="id")], wait: Annotated[Wait, Query()] = 0):
    return ok(delta_runs.follow(router, job_id, wait))


@router.get("/v1/delta/data", responses=replies(200, None, 404, 409, content=BYTES))
def job_data(
    job_id: Annotated[JobId, Query(alias="id")],
    offset: Annotated[Offset, Query()],
    length: Annotated[Length, Query()],
):
    piece = delta_staging.delta_piece(owned(router, job_id), offset, length)
    return Response(status_code=200, content_type="application/octet-stream", body=piece)


@router.post("/v1/files/chunking", responses=replies(200, Entry, 404, 409))
def set_chunking(body: Annotated[ChunkState, Body()]):
    """Store the client's adaptive chunk-size state in the file's link file (seed 000 §III-B)."""
    entry = filesystem(router).set_chunk_state(body.path, body.content_hash, body.chunk_size, body.state)
    return ok(entry.to_dict())
