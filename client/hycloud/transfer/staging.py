"""Bytes too large for one API request (a checksum list, a delta, a bundle) put into S3 by a
presigned PUT, named by their sha256, which S3 checks and the job trusts."""

from __future__ import annotations

import base64
import hashlib
from typing import BinaryIO

from hycloud_core.errors import HyCloudError

from ..http import Http, new_session

PIECE = 4 * 1024 * 1024
STAGE_TIMEOUT_S = 600


def stage(http: Http, source: BinaryIO) -> str:
    """Put `source` (from its start, streamed) into S3; returns its sha256, which names it to the job."""
    digest, size = hashlib.sha256(), 0
    source.seek(0)
    while piece := source.read(PIECE):
        digest.update(piece)
        size += len(piece)
    staged = http.json("POST", "/v1/delta/staging", json={"sha256": digest.hexdigest(), "size": size})
    source.seek(0)
    response = new_session().put(
        staged["url"],
        data=source,
        headers={
            "x-amz-checksum-sha256": base64.b64encode(digest.digest()).decode(),
            "Content-Length": str(size),
        },
        timeout=STAGE_TIMEOUT_S,
    )
    if response.status_code >= 300:
        raise HyCloudError(f"staging the delta failed ({response.status_code})", code="staging-failed")
    return staged["staged"]
