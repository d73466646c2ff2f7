"""The version a write may replace, sent as HTTP preconditions.

A write that names the version it last saw at its path (a content hash, or `absent` for none)
commits only over that version; anything else there is a 409 `version-mismatch`, never an
overwrite. Sync sends one with every file it pushes, which is what keeps a version another device
wrote meanwhile (`sync/executor.py`). The same words go in a bundle member's `expect`.
"""

from __future__ import annotations

from hycloud_core.bundle import ABSENT

__all__ = ["ABSENT", "headers"]


def headers(expect: str | None) -> dict[str, str]:
    """`If-Match: <hash>` or `If-None-Match: *`; nothing when any version may be replaced."""
    if expect is None:
        return {}
    return {"If-None-Match": "*"} if expect == ABSENT else {"If-Match": expect}
