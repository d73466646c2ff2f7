"""User paths: one normal form for client and cloud, and confinement to a namespace.

A user path is absolute within the user's namespace ("/a/b.txt"). Normalising refuses rather
than repairs anything that could name a place outside the namespace or be read two ways:
`..`/`.` components, NUL and control characters, lone surrogates, backslashes, and percent-encoded
dots or slashes (the API decodes a path exactly once, so an encoded escape can only be an attack).
"""

from __future__ import annotations

import os
import re
import unicodedata

from .errors import InvalidPathError

MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4096
_ENCODED_ESCAPE = re.compile(r"%(2e|2f|5c|00)", re.IGNORECASE)


def normalize(path: str) -> str:
    """Return the canonical form "/a/b" of a user path, or raise InvalidPathError."""
    if not isinstance(path, str) or path == "":
        raise InvalidPathError("path must be a non-empty string")
    if not is_unicode(path):
        raise InvalidPathError("path is not valid Unicode (lone surrogate)")
    path = unicodedata.normalize("NFC", path)
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise InvalidPathError("path contains control characters")
    if "\\" in path:
        raise InvalidPathError("path contains a backslash")
    if _ENCODED_ESCAPE.search(path):
        raise InvalidPathError("path contains a percent-encoded dot, slash or NUL")
    parts = [p for p in path.split("/") if p != ""]
    for part in parts:
        if part in (".", ".."):
            raise InvalidPathError("path contains '.' or '..'")
        if len(part.encode()) > MAX_NAME_BYTES:
            raise InvalidPathError(f"name longer than {MAX_NAME_BYTES} bytes")
    canonical = "/" + "/".join(parts)
    if len(canonical.encode()) > MAX_PATH_BYTES:
        raise InvalidPathError(f"path longer than {MAX_PATH_BYTES} bytes")
    return canonical


def is_unicode(text: str) -> bool:
    """False for strings holding lone surrogates (JSON "\\ud800"): they have no UTF-8 form on disk."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parent(path: str) -> str:
    return normalize(path).rsplit("/", 1)[0] or "/"


def name(path: str) -> str:
    return normalize(path).rsplit("/", 1)[1]


def is_related(a: str, b: str) -> bool:
    """True when one path is the other or an ancestor of it (their operations must stay ordered)."""
    a, b = normalize(a), normalize(b)
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


def cache_name(user: str, path: str) -> str:
    """Relay-cache file name: the full path with '/' replaced by '#' (seed 000 §III-B)."""
    return f"{user}{normalize(path)}".replace("/", "#")


def confine(root: str, path: str) -> str:
    """Host path of a user path under `root`, refusing any result that resolves outside it.

    realpath catches symlinks planted inside the namespace that point out of it.
    """
    root_real = os.path.realpath(root)
    host = os.path.join(root_real, normalize(path).lstrip("/"))
    resolved = os.path.realpath(host)
    if resolved != root_real and not resolved.startswith(root_real + os.sep):
        raise InvalidPathError("path resolves outside the namespace")
    return host
