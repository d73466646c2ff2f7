"""Request shapes: typed fields and JSON bodies, checked before any route runs.

A field fails with the same stable code the core library would give (`invalid-path`,
`bad-content-hash`, ...), so validation moved in front of the routes without changing what a
client sees; the checks themselves stay in hycloud_core, shared with the client.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

from annotated_types import Ge, Le, MaxLen
from pydantic import AfterValidator, AllowInfNan, BaseModel, ConfigDict, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

from hycloud_core import content, jobs, paths
from hycloud_core import share_links as shares
from hycloud_core.api_limits import MAX_WAIT_S
from hycloud_core.errors import HyCloudError
from hycloud_core.fs.relay_cache import MAX_PIECE
from hycloud_core.store import trash_records, tree_jobs, version_records

MAX_TEXT = 4096  # any free-text field (cursor, proof, digest): far above every legitimate value
MAX_STATE_BYTES = 16_384  # the adaptive chunk-size state kept in a link file
MAX_OFFSET = 2**62  # beyond any file; keeps seek() inside a signed 64-bit offset


def _checked(check: Callable[[str], object]) -> Callable[[str], str]:
    """A validator running a hycloud_core check; its error code becomes the validation error's type."""

    def validate(value: str) -> str:
        try:
            check(value)
        except HyCloudError as err:
            raise PydanticCustomError(err.code, err.message) from None
        return value

    return validate


def _checked_string(check: Callable[[str], object], pattern: str, **schema: str) -> Any:
    """A string checked by a hycloud_core check, shown in the OpenAPI contract by its pattern."""
    return Annotated[
        str, AfterValidator(_checked(check)), WithJsonSchema({"type": "string", "pattern": pattern, **schema})
    ]


def _plain_text(value: str) -> str:
    if "\x00" in value or not paths.is_unicode(value):
        raise PydanticCustomError("bad-text", "must be valid Unicode without NUL")
    return value


def _small_state(value: dict) -> dict:
    if len(json.dumps(value)) > MAX_STATE_BYTES:
        raise PydanticCustomError("bad-body", f"state must be at most {MAX_STATE_BYTES} bytes of JSON")
    return value


Text = Annotated[str, MaxLen(MAX_TEXT), AfterValidator(_plain_text)]
UserPath = Annotated[
    str,
    AfterValidator(_checked(paths.normalize)),
    WithJsonSchema(
        {"type": "string", "minLength": 1, "maxLength": paths.MAX_PATH_BYTES, "description": "e.g. /a/b.txt"}
    ),
]
ContentHash = _checked_string(content.checked_hash, "^[0-9a-f]{64}$", description="sha256, hex")
JobId = _checked_string(jobs.checked_job_id, jobs.JOB_ID_PATTERN)
Offset = Annotated[int, Ge(0), Le(MAX_OFFSET)]
Length = Annotated[int, Ge(1), Le(MAX_PIECE)]
# A long poll is held at most MAX_WAIT_S, well inside API Gateway's 29 s (past them it answers 504
# instead of the controller): a longer wait is accepted and cut, and the client asks again.
Wait = Annotated[
    float,
    Ge(0),
    Le(3600),
    AllowInfNan(False),
    AfterValidator(lambda wait: min(wait, MAX_WAIT_S)),
    Field(description=f"seconds to hold the answer while the job runs; held at most {MAX_WAIT_S:g}"),
]
PageLimit = Annotated[int, Ge(1), Le(1000)]
FileMode = Annotated[int, Ge(0), Le(0o777)]  # a file's permission bits, kept so put -r/get -r round trip them
FileTime = Annotated[
    float, Ge(0), Le(2**34), AllowInfNan(False)
]  # the uploader's modification time (epoch s)
ByteCount = Annotated[int, Ge(0), Le(MAX_OFFSET)]


class Body(BaseModel):
    """JSON bodies are strict: "true" is not a boolean and 1.0 is not an integer."""

    model_config = ConfigDict(strict=True)


class MakeDirectory(Body):
    path: UserPath
    parents: bool | None = None


class PathPair(Body):
    src: UserPath
    dst: UserPath


class RelayTarget(Body):
    path: UserPath


class StartUpload(Body):
    size: ByteCount
    content_hash: ContentHash
    part_digests: Annotated[list[Text], Field(max_length=content.MAX_PARTS)] = Field(
        description="base64 SHA-256 of each 8 MiB part"
    )


class UploadUrls(Body):
    content_hash: ContentHash
    parts: Annotated[list[Annotated[int, Ge(1), Le(content.MAX_PARTS)]], Field(max_length=1000)]


class CommitUpload(Body):
    path: UserPath
    content_hash: ContentHash
    proof: Text | None = None
    parents: bool | None = None
    mtime: FileTime | None = None
    mode: FileMode | None = None
    sha256: ContentHash | None = None  # the whole file's plain sha256, kept for `sha256sum` checks


class DeltaByVersion(Body):
    path: UserPath
    base_hash: ContentHash


class ChunkState(Body):
    path: UserPath
    content_hash: ContentHash
    chunk_size: Annotated[int, Ge(1), Le(2**31)]
    state: Annotated[dict[str, Any], AfterValidator(_small_state)]


class NewShare(Body):
    path: UserPath
    expires_in: Annotated[int, Ge(1), Le(shares.MAX_EXPIRY_S)] = Field(
        default=shares.DEFAULT_EXPIRY_S, description="seconds until the link stops working"
    )


ShareToken = _checked_string(shares.checked_token, shares.TOKEN.pattern)
TreeJobId = _checked_string(tree_jobs.checked_id, tree_jobs.ID_PATTERN)
VersionId = _checked_string(version_records.checked_version_id, version_records.ID_PATTERN)


class Restore(Body):
    path: UserPath
    version: VersionId | None = Field(
        default=None, description="from GET /v1/versions; the newest when absent"
    )
    to: UserPath | None = Field(default=None, description="where to write it; the path itself when absent")


TrashItemId = _checked_string(trash_records.checked_item_id, trash_records.ID_PATTERN)


class TrashRestore(Body):
    item: TrashItemId
    to: UserPath | None = Field(
        default=None, description="where to put it back; where it was when absent (409 if taken)"
    )


class TrashEmpty(Body):
    item: TrashItemId | None = Field(default=None, description="one item; every item when absent")
