"""Ids that sort by time, of versions and trash items: the milliseconds since the epoch, then a
random tail so that two made in one millisecond differ. A partition keyed by them reads oldest
first, and an id alone tells when it was made."""

from __future__ import annotations

import re
import secrets

from ..errors import checked_match

ID_PATTERN = r"^[0-9]{13}-[0-9a-f]{8}$"
_ID = re.compile(ID_PATTERN)


def new_id(now: float) -> str:
    return f"{int(now * 1000):013d}-{secrets.token_hex(4)}"


def made_at(id_: str) -> float:
    """When the id was made (seconds)."""
    return int(id_.split("-", 1)[0]) / 1000


def checked_id(value: object, message: str, code: str) -> str:
    """An id as a client gave it, or a 400: it becomes part of a DynamoDB key (and an EFS name)."""
    return checked_match(value, _ID, message, code)
