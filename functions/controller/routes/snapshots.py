"""Snapshots: a folder's tree copied read-only at a moment, browsed, read, restored, removed
(services/snapshots.py over hycloud_core.fs.snapshots)."""

from __future__ import annotations

from typing import Annotated, Literal

from answers import (
    BYTES,
    LINK_TYPE,
    TREE_JOB_ACCEPTED,
    DownloadLink,
    Entry,
    Listing,
    TreeJobStatus,
    absent,
    ok,
    replies,
)
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import filesystem
from models import Body as StrictBody
from models import PageLimit, Text, UserPath, _checked_string
from pydantic import BaseModel, Field
from services import snapshots

from hycloud_core.errors import ForbiddenError
from hycloud_core.store import snapshot_records

router = APIGatewayRouter()
MAX_PAGE = 1000
SnapshotName = _checked_string(snapshot_records.checked_name, snapshot_records.NAME_PATTERN)


# --- shapes ---------------------------------------------------------------------------------------
class SnapshotCreate(StrictBody):
    path: UserPath = Field(description="the folder to copy")
    name: SnapshotName | None = Field(default=None, description="unique per user; the time (UTC) when absent")


class SnapshotRestore(StrictBody):
    path: UserPath = Field(
        default="/", description="what to restore, within the snapshot; all of it by default"
    )
    to: UserPath | None = Field(default=None, description="where to write it; where it was when absent")
    replace: bool = Field(
        default=False, description="move what is at the destination to the trash first (else 409 when taken)"
    )


class Snapshot(BaseModel):
    """A read-only copy of a folder's tree as it was at `at`."""

    name: str
    id: str = Field(description="its folder in the user's snapshot area")
    path: str = Field(description="the folder it copies")
    at: float = Field(description="when it was made")
    by: str = Field(description="the user id that made it")
    files: int = Field(description="files it holds")
    bytes: int = Field(description="bytes its files hold (large files share their content, not copied)")
    state: Literal["making", "ready"]


class SnapshotTotals(BaseModel):
    bytes: int
    files: int
    snapshots: int


class SnapshotList(BaseModel):
    snapshots: list[Snapshot] = Field(description="newest first")
    totals: SnapshotTotals = Field(description="what they hold together, apart from `usage` (as the trash)")


class SnapshotMade(BaseModel):
    snapshot: Snapshot
    job: TreeJobStatus = absent()  # a tree not copied within the request: the job that ends it


class SnapshotRestored(BaseModel):
    restored: Snapshot
    entry: Entry = Field(description="what is at the destination now")


class SnapshotRemoved(BaseModel):
    removed: Snapshot


DOWNLOAD = {**BYTES, LINK_TYPE: {"model": DownloadLink}}
Name = Annotated[SnapshotName, Path()]


# --- routes ---------------------------------------------------------------------------------------
@router.get("/v1/snapshots", responses=replies(200, SnapshotList))
def list_snapshots():
    """Every snapshot, newest first, and the files and bytes they hold together."""
    return ok(snapshots.listing(filesystem(router)))


@router.post("/v1/snapshots", responses=replies((201, 202), SnapshotMade, 404, 409))
def create(body: Annotated[SnapshotCreate, Body()]):
    """Snapshot the folder `path` read-only, at once: its moment is this request's. 201 ready
    when the tree was copied within the request (large files are linked, never copied); else
    202 "making", with the job copying the rest (copy-on-write: writes below go on meanwhile;
    follow it at GET /v1/tree-jobs). 409 `already-exists` for a taken name, `busy` while a
    snapshot of it or above it is being made; 403 `quota-exceeded` when the user is over it (or
    the snapshot, copied, takes them over: the job fails so and the snapshot goes)."""
    made = snapshots.create(filesystem(router), body.path, body.name)
    return ok(made, 202 if "job" in made else 201)


@router.get("/v1/snapshots/<name>/dirs", responses=replies(200, Listing, 404, 409))
def browse(
    name: Name,
    path: Annotated[UserPath, Query(description="a folder within the snapshot")] = "/",
    limit: Annotated[PageLimit, Query()] = MAX_PAGE,
    cursor: Annotated[Text, Query(description="from the previous page")] = "",
):
    """One page of a folder in the snapshot (paths within it: "/" is the folder it copies)."""
    return ok(snapshots.browse(filesystem(router), name, path, cursor or None, limit))


@router.get("/v1/snapshots/<name>/stat", responses=replies(200, Entry, 404, 409))
def stat(name: Name, path: Annotated[UserPath, Query()] = "/"):
    return ok(snapshots.stat(filesystem(router), name, path))


@router.get("/v1/snapshots/<name>/files", responses=replies(200, None, 404, 409, content=DOWNLOAD))
def read(name: Name, path: Annotated[UserPath, Query()]):
    """A file as the snapshot holds it: a small file's bytes, or where to fetch a large one's."""
    return snapshots.read(filesystem(router), name, path)


@router.put("/v1/snapshots/<name>/files", responses=replies(403, None))
def write(name: Name, path: Annotated[UserPath, Query()]):
    """Refused: a snapshot is read-only (403 `snapshot-read-only`); restore it to write."""
    raise ForbiddenError(f"snapshot {name} is read-only; restore it to change it", code="snapshot-read-only")


@router.delete("/v1/snapshots/<name>/files", responses=replies(403, None))
def delete_file(name: Name, path: Annotated[UserPath, Query()]):
    """Refused: a snapshot is read-only (403 `snapshot-read-only`); remove the whole snapshot."""
    raise ForbiddenError(f"snapshot {name} is read-only; remove it whole", code="snapshot-read-only")


@router.post(
    "/v1/snapshots/<name>/restore",
    responses={**replies(201, SnapshotRestored, 404, 409), **TREE_JOB_ACCEPTED},
)
def restore(name: Name, body: Annotated[SnapshotRestore, Body()]):
    """Copy `path` of the snapshot back to where it was, or to `to`. Nothing is overwritten:
    409 `already-exists` when that place is taken, unless `replace` moves it to the trash first.
    A tree of more entries than one request copies is restored by a tree job (202, op `restore`;
    follow it at GET /v1/tree-jobs). 409 `snapshot-not-ready` while the snapshot is being made."""
    done = snapshots.restore(filesystem(router), name, body.path, body.to, body.replace)
    return ok(done, 202 if "job" in done else 201)


@router.delete("/v1/snapshots/<name>", responses=replies(200, SnapshotRemoved, 404))
def remove(name: Name):
    """Remove a snapshot for good; content only it named is then the collector's."""
    return ok(snapshots.remove(filesystem(router), name))
