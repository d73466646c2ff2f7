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

import hashlib
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any, Literal

from answers import BINARY_BODY, BYTES, replies
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import CONFIG, filesystem, namespace, ok, raw_body, s3, user
from models import Body as JsonBody
from models import ContentHash, Text, UserPath
from pydantic import BaseModel, Field

from hycloud_core import bundle, content, jobs, paths
from hycloud_core.errors import BadRequestError, ConflictError, HyCloudError, PayloadTooLargeError
from hycloud_core.fs import Namespace
from hycloud_core.fs.namespace import Entry
from hycloud_core.fs.small_batch import SmallWrite, put_small_batch
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


class TreeEntry(BaseModel):
    rel: str = Field(description="path below the listed folder")
    type: Literal["file", "dir"]


class TreePage(BaseModel):
    entries: list[TreeEntry]
    cursor: str | None = Field(description="pass back for the next page; null on the last")


class BundleRequest(JsonBody):
    paths: list[UserPath] = Field(min_length=1, max_length=bundle.MAX_MEMBERS)


@router.post("/v1/bundles", responses=replies(200, BundleResult, 409, 413), openapi_extensions=BINARY_BODY)
def upload(
    parents: Annotated[bool, Query(description="make missing parent folders")] = True,
    staged: Annotated[ContentHash | None, Query(description="sha256 of a bundle staged in S3")] = None,
):
    """Commit each file of a bundle on its own; the answer says, per file, how that went."""
    if staged is None:
        members = bundle.unpack(raw_body(router)).files
    else:
        members = bundle.unpack(_staged_body(staged), max_body=bundle.MAX_STAGED).files
    checked = [
        _checked(m, data, first)
        for (m, data), first in zip(members, _first_of_each_path(members), strict=True)
    ]
    writes = [c for c in checked if isinstance(c, SmallWrite)]
    done = iter(put_small_batch(filesystem(router), writes, parents=parents))
    return ok(
        {
            "files": [
                _result(m, data, c if isinstance(c, HyCloudError) else next(done))
                for (m, data), c in zip(members, checked, strict=True)
            ]
        }
    )


def _staged_body(digest: str) -> bytes:
    """The bundle the caller staged under `digest` (S3 checked the sha256 at its PUT), taken out of
    staging: a bundle is committed once, and sent again in full if its answer was lost."""
    if raw_body(router):
        raise BadRequestError("send the bundle in the body or stage it, not both", code="bad-body")
    key = jobs.staged_key(user(router), digest)
    try:
        head = s3().head_object(Bucket=CONFIG.bucket, Key=key)
    except s3().exceptions.ClientError:
        raise ConflictError("nothing staged under that sha256; PUT it first", code="not-staged") from None
    if head["ContentLength"] > bundle.MAX_STAGED:
        raise PayloadTooLargeError(f"a staged bundle is at most {bundle.MAX_STAGED} bytes", code="too-large")
    body = s3().get_object(Bucket=CONFIG.bucket, Key=key)["Body"].read()
    s3().delete_object(Bucket=CONFIG.bucket, Key=key)
    if hashlib.sha256(body).hexdigest() != digest:
        raise BadRequestError("the staged bundle is not what its sha256 says", code="hash-mismatch")
    return body


def _first_of_each_path(members: list[tuple[bundle.Member, bytes]]) -> list[bool]:
    """Whether each member is the first to name its path (two writes of one path would race)."""
    seen: set[str] = set()
    firsts = []
    for member, _ in members:
        path = _canonical(member.path)
        firsts.append(path not in seen)
        seen.add(path)
    return firsts


def _canonical(path: str) -> str:
    try:
        return paths.normalize(path)
    except HyCloudError:
        return path


def _checked(member: bundle.Member, data: bytes, first: bool) -> SmallWrite | HyCloudError:
    """The member as a write, or why it cannot be one."""
    try:
        if not first:
            raise BadRequestError("the bundle names this path twice", code="duplicate-path")
        path = bundle.check_member(member, data, CONFIG.small_file_threshold)
    except HyCloudError as err:
        return err
    return SmallWrite(path, data, member.sha256, member.mtime, member.mode)


def _result(member: bundle.Member, data: bytes, outcome: Entry | HyCloudError) -> dict:
    if isinstance(outcome, HyCloudError):
        return bundle.error_entry(member.path, outcome)
    return {
        **outcome.to_dict(),
        "status": "ok",
        "sha256": member.sha256,
        "content_hash": content.hash_bytes(data),
    }


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
