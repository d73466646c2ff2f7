"""Where a request to an instance's bucket goes: another host:port for that instance when the
caller says so (bench/wan emulates each instance's link through one)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def redirect(url: str, endpoint: str | None) -> str:
    """The URL with its scheme and host:port replaced by `endpoint` (path and signature kept)."""
    if not endpoint:
        return url
    parts, target = urlsplit(url), urlsplit(endpoint)
    return urlunsplit((target.scheme, target.netloc, parts.path, parts.query, parts.fragment))
