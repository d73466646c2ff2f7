"""Response shapes for the OpenAPI document, and the error responses every route may give.

Routes build their answers from the core's dictionaries (`Entry.to_dict()`, ...); these models
only describe them, so schemathesis can check that what the deployed API says is what it sends.
Route functions carry no return annotation on purpose: Powertools would validate (and re-encode)
every response against it, binary bodies included.
"""

from __future__ import annotations

from typing import Any, Literal

from aws_lambda_powertools.event_handler import Response
from pydantic import BaseModel, Field

from hycloud_core.errors import HyCloudError

JSON = "application/json"
OCTET = "application/octet-stream"
LINK_TYPE = "application/vnd.hycloud.link+json"
BYTES = {OCTET: {"schema": {"type": "string", "format": "binary"}}}
BINARY_BODY = {"requestBody": {"required": True, "content": BYTES}}
ERROR_TEXT = {
    400: "Malformed request: the code says which kind, the message which field.",
    401: "No API key.",
    403: "The API key is not valid.",
    404: "No such path, job or upload.",
    409: "The state does not allow it (exists, not empty, changed meanwhile, ...).",
    410: "The share link expired or was revoked.",
    413: "The body is too large.",
    422: "The Idempotency-Key was used for a different request.",
    503: "Busy for now: ask again after the Retry-After seconds.",
}


def absent() -> Any:
    """A field an answer may leave out (it is never null)."""
    return Field(default_factory=lambda: None)


class ErrorDetail(BaseModel):
    code: str = Field(description="stable, kebab-case")
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail


class Entry(BaseModel):
    name: str
    path: str
    type: Literal["file", "dir"]
    size: int
    mtime: float
    storage: Literal["small", "large"] = absent()
    content_hash: str = absent()
    mode: int = absent()
    sha256: str = absent()  # what `sha256sum` prints: a small file's in stat, a large file's as uploaded


class StoredFile(Entry):
    sha256: str


class Listing(BaseModel):
    entries: list[Entry]
    cursor: str | None = Field(description="pass back for the next page; null on the last")


class TrashItem(BaseModel):
    """A file or folder tree `rm` moved into the trash, kept until the trash retention ends."""

    item: str = Field(description="its id: pass it to POST /v1/trash/restore or /v1/trash/empty")
    path: str = Field(description="where it was")
    type: Literal["file", "dir"]
    size: int = Field(description="bytes it holds")
    files: int = Field(description="files it holds")
    at: float = Field(description="when it was removed")
    by: str = Field(description="the user id that removed it")
    pending: bool = Field(
        False,
        description="a large tree's size and files are still being counted (0 until the listing counts them)",
    )


class Removed(BaseModel):
    removed: str
    files: int
    trash: TrashItem = absent()  # absent for an empty folder (nothing kept)


class Deleted(BaseModel):
    deleted: str
    trash: TrashItem = absent()


class TrashList(BaseModel):
    items: list[TrashItem] = Field(description="newest first")
    retention_s: int = Field(description="how long an item is kept before upkeep purges it")


class TrashRestored(BaseModel):
    restored: TrashItem
    entry: Entry = Field(description="what is at the path now")


class Aborted(BaseModel):
    aborted: str


class KnownUser(BaseModel):
    user: str = Field(description="a user of this deployment (enabled); nothing else about them is told")


class Whoami(BaseModel):
    user: str
    id: str = Field(description="the caller's user id: what `by` names in GET /v1/versions and GET /v1/trash")
    small_file_threshold: int
    coded_threshold: int | None = Field(
        default=None,
        description="larger files are erasure-coded by default; absent with fewer than 3 instances",
    )
    coded_whole_limit: int = Field(
        description="the largest coded file a share link or the web app serves whole (the client reads any)"
    )
    part_size: int
    s3_efs_rate: int


class InstanceInfo(BaseModel):
    region: str
    bucket: str
    home: bool = Field(description="the controller's own instance")
    s3_endpoint: str = Field(description="where the instance's presigned URLs point")


class Instances(BaseModel):
    instances: list[InstanceInfo] = Field(description="home first")


class DownloadLink(BaseModel):
    path: str
    size: int
    content_hash: str
    part_size: int
    url: str
    mtime: float = absent()
    chunk_size: int | None = absent()
    chunk_state: dict[str, Any] | None = absent()


class Challenge(BaseModel):
    nonce: str
    ranges: list[list[int]]


class UploadPlan(BaseModel):
    content_hash: str
    dedup: bool
    challenge: Challenge = absent()
    part_size: int = absent()
    parts_done: list[int] = absent()
    missing: list[int] = absent()
    urls: dict[str, str] = absent()


class PartUrls(BaseModel):
    urls: dict[str, str]


class JobError(BaseModel):
    """How a job failed: a stable code and a fixed message, never the task's cause."""

    code: str
    message: str


class QueuePlace(BaseModel):
    """Where a job waits in the FOP queue (docs/SCHEDULING.md)."""

    position: int
    estimated_start_s: float
    workers: int


class RelayStatus(BaseModel):
    path: str
    size: int
    content_hash: str
    state: Literal["ready", "running", "absent", "failed"]
    job: str = absent()
    error: JobError = absent()
    queue: QueuePlace = absent()
    instance: str = absent()  # a coded file's job at a data instance: its region
    url: str = absent()  # ...and, once ready, a presigned GET of the file there (ranges welcome)


class Job(BaseModel):
    state: Literal["running", "ready", "failed", "same"]
    job: str = absent()
    content_hash: str = absent()
    result: dict[str, Any] = absent()
    error: JobError = absent()
    queue: QueuePlace = absent()
    file: dict[str, Any] = absent()  # the path's current version (content_hash, size)


class Usage(BaseModel):
    user: str
    source: Literal["walk", "records"]
    quota: dict[str, Any] = absent()
    usage: dict[str, Any]
    shared: dict[str, Any]
    share_links: dict[str, int] = absent()
    trash: dict[str, int] = (
        absent()
    )  # what the trash holds (bytes, files, items), not in `usage` or the quota
    snapshots: dict[str, int] = absent()  # what the snapshots hold (bytes, files, snapshots), apart too
    costs: dict[str, Any]
    region_storage_costs: dict[str, float] = absent()  # coded blocks' S3 storage per region, USD/month
    relay: dict[str, Any]  # the deployment's relay runs and their cost per GB
    inter_region: dict[str, Any] = absent()  # block bytes repair and migration moved between regions, USD
    # the small-file threshold in force for the caller: threshold, source (configured, user,
    # deployment, default), reason, at, inputs (the measured mix it was chosen from)
    threshold: dict[str, Any] = absent()
    prices: dict[str, Any]


class Version(BaseModel):
    """An earlier version of a file, kept for the deployment's retention."""

    path: str
    version: str = Field(description="its id: pass it to POST /v1/restore")
    kind: Literal["small", "large"]
    content_hash: str
    size: int
    mtime: float = Field(description="the version's own modification time")
    by: str = Field(description="the user id whose write replaced or deleted it")
    at: float = Field(description="when it stopped being current")
    reason: Literal["overwrite", "delete"]
    expires: float = Field(description="kept until then")
    sha256: str = absent()
    erasure: dict[str, Any] = absent()


class VersionList(BaseModel):
    path: str
    current: Entry | None = Field(description="what the path holds now; null when nothing")
    versions: list[Version] = Field(description="newest first")


class Restored(BaseModel):
    restored: Version
    entry: Entry = Field(description="the file written")


def replies(
    status: int | tuple[int, ...], model: type[BaseModel] | None, *errors: int, content: dict | None = None
) -> dict:
    """The `responses=` of a route: its answer(s), then 400/401/403 and the given error statuses."""
    answer = content or {JSON: {"model": model}}
    statuses = status if isinstance(status, tuple) else (status,)
    out: dict[int, dict] = {code: {"description": "OK", "content": answer} for code in statuses}
    for code in sorted({400, 401, 403, *errors}):
        out[code] = {"description": ERROR_TEXT[code], "content": {JSON: {"model": ErrorBody}}}
    return out


class ShareInfo(BaseModel):
    id: str = Field(description="the unguessable token in the link")
    path: str
    content_hash: str = Field(
        description="what the path held when shared; the link serves its current content"
    )
    created: float
    expires: float
    revoked: float = absent()
    downloads: int
    bytes_served: int
    state: Literal["active", "expired", "revoked"]
    url_path: str = Field(description="append to the API's base URL for the public link")


class ShareList(BaseModel):
    shares: list[ShareInfo]


class TreeJobError(BaseModel):
    code: str
    message: str
    status: int


class TreeJobStatus(BaseModel):
    """A tree job; resubmitting its operation follows it while it runs and resumes it after."""

    job: str
    op: Literal["copy", "move", "remove", "empty", "snapshot", "restore"] = Field(
        description="empty: the trash's emptying; snapshot: making one (dst its name); restore: a "
        "snapshot's (src within it)"
    )
    src: str
    dst: str | None
    state: Literal["running", "succeeded", "failed", "stopped"]
    done: int = Field(description="files copied, moved or removed so far (a snapshot: by its job)")
    total: int | None = Field(description="files in the tree; null until counted")
    attempt: int
    error: TreeJobError = absent()
    queue: QueuePlace = absent()


class TrashEmptied(BaseModel):
    emptied: list[str] = Field(description="the ids of the items removed for good")
    job: TreeJobStatus = absent()  # what items of many files hold is removed by a job


TREE_JOB_ACCEPTED = {
    202: {
        "description": "Run as a tree job: follow it at GET /v1/tree-jobs.",
        "content": {JSON: {"model": TreeJobStatus}},
    }
}


def ok(body: dict | list, status: int = 200) -> Response:
    return Response(status_code=status, content_type="application/json", body=body)


def error_answer(err: HyCloudError) -> Response:
    """The project's JSON error at its status, with `Retry-After` (whole seconds) when the error
    says when to ask again (a 429 over a limit, a 503 of a version still settling)."""
    retry = getattr(err, "retry_after", None)
    return Response(
        status_code=err.status,
        content_type="application/json",
        body=err.to_body(),
        headers={"Retry-After": str(retry)} if retry is not None else None,
    )
