"""What the server says it stored is checked against what was sent, after every write; what it
sends is checked against the sha256 it sends with it.

A write the server acknowledges with another content hash (a body changed in transit past every
check, a job that answered for another request) must not end as a success.
"""

from __future__ import annotations

import hashlib
from typing import Any

from hycloud_core.errors import HyCloudError


def check_stored(path: str, reported: str | None, expected: str) -> None:
    if reported != expected:
        raise HyCloudError(f"{path}: server stored {reported}, expected {expected}", code="stored-mismatch")


def verified_body(path: str, response: Any) -> bytes:
    """A small file's body, refused when it does not match the `x-hycloud-sha256` sent with it."""
    data = response.content
    expected = response.headers.get("x-hycloud-sha256")
    if expected and hashlib.sha256(data).hexdigest() != expected:
        raise HyCloudError(f"download of {path} is corrupt (sha256 mismatch)", code="corrupt-download")
    return data
