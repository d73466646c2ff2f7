"""`If-Match` / `If-None-Match`: the version a write requires the path to hold."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Header

from hycloud_core.errors import BadRequestError
from hycloud_core.fs.operations import ABSENT

IfMatch = Annotated[
    str | None,
    Header(
        alias="if-match",
        description="The path's current content_hash (a small file's body sha256 too); else 409 version-mismatch",
    ),
]
IfNoneMatch = Annotated[
    str | None,
    Header(alias="if-none-match", description="`*`: the path must not exist; else 409 version-mismatch"),
]


def expected_version(if_match: str | None, if_none_match: str | None) -> str | None:
    """The version a write requires the path to hold (ABSENT for `If-None-Match: *`); None when
    the request names none, and the last writer wins."""
    if (if_none_match or "").strip() == "*":
        return ABSENT
    if if_match is None:
        return None
    value = if_match.strip().strip('"').lower()
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise BadRequestError("If-Match must be a content hash (64 hex digits)", code="bad-version")
    return value
