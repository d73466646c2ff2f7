"""Bundles: many small files uploaded or downloaded in one request (hycloud_core.bundle).

Each member of an upload is committed on its own, with the guarantees of a single-file PUT
(leases, records, usage, quota), the bundle's members together (fs/small_batch.py: one lease
transaction, one quota reservation and batched records for all), and acknowledged on its own: a bad member
(hostile path, hash mismatch, over quota, a folder in its way) is reported with the status a
single PUT would have answered, and the others commit. A download answers the small files asked
for in one bundle, large ones by reference (the client fetches them straight from S3), and those
that did not fit the answer as `later` (ask again). A bundle too large compressed for one request
is staged in S3 first (a presigned PUT from `POST /v1/delta/staging`, checked by its sha256) and
named by `?staged=<sha256>`.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any, Literal

from answers import BINARY_BODY, BYTES, JSON, ok, replies
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from bodies import raw_body
from context import CONFIG, filesystem, namespace, s3, user
from models import Body as JsonBody
from models import ContentHash, Text, UserPath
from polling import long_poll
from pydantic import BaseModel, Field
from services import bundle_jobs
from small_files import accept_limit, meter

from hycloud_core import bundle, jobs
from hycloud_core import constants as c
from hycloud_core.api_limits import MAX_WAIT_S
from hycloud_core.errors import (
    BadRequestError,
    HyCloudError,
    NotFoundError,
)
from hycloud_core.fs import Namespace
from hycloud_core.fs.bundle_commit import commit_members, take_staged
from hycloud_core.fs.tree_walk import PRE, walk

router = APIGatewayRouter()
_POOL = ThreadPoolExecutor(16)  # per-file work waits on EFS and DynamoDB, not the CPU
# what an answer's files may add up to before compression; more is left for the next request
ANSWER_RAW = bundle.MAX_RAW // 2
TREE_PAGE = 5000  # entries of a tree listing page


class MemberError(BaseModel):
    code: str
    message: str
    status: int


class MemberResult(BaseModel):
    path: str
    status: Literal["ok", "error"]
    error: MemberError | None = None
    size: int | None = None
    content_hash: str | None = None
    sha256: str | None = None
    mtime: float | None = None
    mode: int | None = None


class BundleResult(BaseModel):
    files: list[MemberResult] = Field(description="one per member, in the bundle's order")


class BundleJob(BaseModel):
    job: str
    state: Literal["queued", "running", "succeeded", "failed"]
    queue: dict[str, Any] | None = Field(None, description="while queued: position, estimated_start_s")
    files: list[MemberResult] | None = Field(None, description="once succeeded: one per member, in order")
    error: MemberError | None = Field(
        None, description="once failed: why the bundle as a whole was not committed"
    )


class TreeEntry(BaseModel):
    rel: str = Field(description="path below the listed folder")
    type: Literal["file", "dir"]


class TreePage(BaseModel):
    entries: list[TreeEntry]
    cursor: str | None = Field(description="pass back for the next page; null on the last")


class BundleRequest(JsonBody):
    paths: list[UserPath] = Field(min_length=1, max_length=bundle.MAX_MEMBERS)


QUEUED = {
    202: {
        "description": "A staged bundle: its commit is queued; follow it at GET /v1/bundles/jobs.",
        "content": {JSON: {"model": BundleJob}},
    }
}


@router.post(
    "/v1/bundles",
    responses={**replies(200, BundleResult, 409, 413), **QUEUED},
    openapi_extensions=BINARY_BODY,
)
def upload(
    parents: Annotated[bool, Query(description="make missing parent folders")] = True,
    staged: Annotated[ContentHash | None, Query(description="sha256 of a bundle staged in S3")] = None,
    root: Annotated[
        UserPath, Query(description="the folder all members are in (orders a staged bundle's job)")
    ] = "/",
):
    """Commit each file of a bundle on its own; the answer says, per file, how that went. A staged
    bundle is a transfer: its commit is queued (202, follow it at `GET /v1/bundles/jobs`)."""
    if staged is not None and raw_body(router):
        raise BadRequestError("send the bundle in the body or stage it, not both", code="bad-body")
    if staged is not None and os.environ.get(c.ENV_BUNDLE_STATE_MACHINE):
        return ok(bundle_jobs.queue_staged(user(router), staged, parents, root), 202)
    if staged is None:
        members = bundle.unpack(raw_body(router)).files
    else:  # no bundle jobs deployed (a standby): committed in the request
        body = take_staged(s3(), CONFIG.bucket, user(router), staged)
        members = bundle.unpack(body, max_body=bundle.MAX_STAGED).files
    files = commit_members(filesystem(router), members, accept_limit(user(router)), parents, root)
    meter(user(router), writes=[len(data) for _, data in members])
    return ok({"files": files})


@router.get("/v1/bundles/jobs", responses=replies(200, BundleJob, 404))
def bundle_job(
    job: Annotated[str, Query(pattern=jobs.BUNDLE_JOB_PATTERN)],
    wait: Annotated[float, Query(ge=0, le=MAX_WAIT_S, description="hold the answer while it runs")] = 0,
):
    """A staged bundle's commit: its place while queued, then each member's result."""
    caller = user(router)
    answer = long_poll(
        lambda: bundle_jobs.state_of(job, caller) or {},
        wait,
        lambda a: a.get("state") in ("queued", "running"),
    )
    if not answer:
        raise NotFoundError("no such bundle job", code="no-such-job")
    return ok({k: v for k, v in answer.items() if v is not None})


@router.get("/v1/bundles/tree", responses=replies(200, TreePage, 404, 409))
def tree(
    path: Annotated[UserPath, Query()],
    cursor: Annotated[Text, Query(description="from the previous page")] = "",
    limit: Annotated[int, Query(ge=1, le=TREE_PAGE)] = TREE_PAGE,
):
    """Everything below a folder, folders before what they hold, in pages: what a bundled
    download asks for, without one listing (and one round trip) per folder."""
    ns = namespace(router)
    ns.require_dir(path)
    entries: list[dict] = []
    for step in walk(ns, path, PRE, cursor or None):
        if step.rel:
            entries.append({"rel": step.rel, "type": "dir" if step.is_dir else "file"})
        if len(entries) >= limit:
            return ok({"entries": entries, "cursor": step.rel})
    return ok({"entries": entries, "cursor": None})


@router.post("/v1/bundles/download", responses=replies(200, None, content=BYTES))
def download(body: Annotated[BundleRequest, Body()]):
    """The small files asked for, in one bundle; `others` says where the rest are."""
    ns = namespace(router)
    entries = list(_POOL.map(lambda p: _look(ns, p), body.paths))
    files, others = _read(ns, entries)
    meter(user(router), reads=[len(data) for _, data in files])
    packed = bundle.pack(files, others)
    while len(packed) > bundle.MAX_BODY and len(files) > 1:  # incompressible: half waits for later
        keep = len(files) // 2
        others += [_later(m.path) for m, _ in files[keep:]]
        files = files[:keep]
        packed = bundle.pack(files, others)
    return Response(status_code=200, content_type="application/octet-stream", body=packed)


def _look(ns: Namespace, path: str) -> dict[str, Any]:
    try:
        entry = ns.stat(path).to_dict()
    except HyCloudError as err:
        return bundle.error_entry(path, err)
    if entry["type"] == "dir":
        return bundle.error_entry(
            path, HyCloudError(f"{path} is a directory", code="is-a-directory", status=409)
        )
    return {**entry, "status": "large" if entry.get("storage") == "large" else "small"}


def _read(ns: Namespace, entries: list[dict]) -> tuple[list[tuple[bundle.Member, bytes]], list[dict]]:
    """Read the small files that fit one answer; everything else is described in `others`."""
    chosen, others, total = [], [], 0
    for entry in entries:
        if entry["status"] != "small":
            others.append(entry)
        elif total + entry["size"] <= ANSWER_RAW or not chosen:
            chosen.append(entry)
            total += entry["size"]
        else:
            others.append(_later(entry["path"]))
    files = []
    for entry, data in zip(chosen, _POOL.map(lambda e: _data(ns, e["path"]), chosen), strict=True):
        if isinstance(data, HyCloudError):
            others.append(bundle.error_entry(entry["path"], data))
        else:
            files.append((bundle.member_of(entry["path"], data, entry["mtime"], entry.get("mode")), data))
    return files, others


def _data(ns: Namespace, path: str) -> bytes | HyCloudError:
    try:
        return ns.read(path)
    except HyCloudError as err:  # removed or replaced by a large file meanwhile
        return err


def _later(path: str) -> dict:
    return {"path": path, "status": "later"}
