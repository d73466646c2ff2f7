"""Relay naming shared by the controller and the relay and delta workflows: where their files go,
how a large file is split; a relay job's key and execution are jobs/ concerns."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .content import PART_SIZE

REMOTE_RELAY_PREFIX = "relay/"  # a data instance's bucket: files its relay jobs made whole (a day)
LAYOUT_PREFIX = "layouts/"  # a data instance's bucket: layouts its jobs read (a day)


def byte_ranges(size: int, range_bytes: int) -> list[dict[str, Any]]:
    """The pieces a relay too large for one function copies in parallel (a Step Functions Map).

    Each piece is a whole number of content-hash parts, so the digests a piece takes of what it
    wrote are the file's own part digests and the last step verifies the file without reading it.
    """
    step = max(PART_SIZE, range_bytes // PART_SIZE * PART_SIZE)
    return [
        {"index": i, "offset": offset, "length": min(step, size - offset)}
        for i, offset in enumerate(range(0, size, step))
    ]


def layout_name(content_hash: str, layout: dict[str, Any]) -> str:
    """The name a coded file's layout is kept under for a job: its content hash and a digest of
    the layout itself, so a layout a ring change rewrote (blocks at other instances) is a new name
    and no job reads an old one."""
    digest = hashlib.sha256(json.dumps(layout, sort_keys=True).encode()).hexdigest()[:16]
    return f"{content_hash}-{digest}.json"


def transit_key(key: str) -> str:
    """Where a data instance's relay copies an object of the home bucket before reading it (the
    VPC's S3 endpoint reads its own region only); expires with relay/."""
    return f"{REMOTE_RELAY_PREFIX}transit/{key}"


def remote_relay_key(content_hash: str) -> str:
    """Where a data instance's relay job puts the file it made whole, in its own bucket."""
    return f"{REMOTE_RELAY_PREFIX}{content_hash}"
