"""What the server says it stored is checked against what was sent, after every write.

A write the server acknowledges with another content hash (a body changed in transit past every
check, a job that answered for another request) must not end as a success.
"""

from __future__ import annotations

from hycloud_core.errors import HyCloudError


def check_stored(path: str, reported: str | None, expected: str) -> None:
    if reported != expected:
        raise HyCloudError(f"{path}: server stored {reported}, expected {expected}", code="stored-mismatch")
