"""Share-link formats shared by client and cloud: tokens and lifetimes (`--expires 1d`)."""

from __future__ import annotations

import re

from .errors import BadRequestError

TOKEN = re.compile(r"^[A-Za-z0-9_-]{32}$")
MAX_EXPIRY_S = 30 * 86400
DEFAULT_EXPIRY_S = 86400
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw]?)\s*$")


def parse_duration(text: str) -> int:
    """`90`, `90s`, `15m`, `12h`, `1d`, `2w` as seconds: the `--expires` of `hycloud share`."""
    match = _DURATION.match(text.lower())
    if not match:
        raise BadRequestError(f"{text!r} is not a duration like 30m, 12h, 1d or 2w", code="bad-duration")
    return checked_expiry(int(match.group(1)) * _UNITS[match.group(2) or "s"])


def checked_expiry(seconds: int) -> int:
    if not 1 <= seconds <= MAX_EXPIRY_S:
        raise BadRequestError(f"a share lasts from 1 s to {MAX_EXPIRY_S // 86400} days", code="bad-duration")
    return seconds


def checked_token(token: str) -> str:
    if not TOKEN.match(token):
        raise BadRequestError("a share token is 32 URL-safe characters", code="bad-share-token")
    return token
