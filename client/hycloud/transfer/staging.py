"""Bytes too large for one API request (a checksum list, a delta, a bundle) put into S3 by a
presigned PUT, named by their sha256, which S3 checks and the job trusts."""

from __future__ import annotations

import base64
import hashlib
from typing import BinaryIO

from hycloud_core.errors import HyCloudError

from ..http import Transport, new_session
from .config import DEFAULT, TransferConfig
from .renew import UrlBook, with_renewal

PIECE = 4 * 1024 * 1024


def stage(http: Transport, source: BinaryIO, config: TransferConfig = DEFAULT) -> str:
    """Put `source` (from its start, streamed) into S3; returns its sha256, which names it to the job."""
    digest, size = hashlib.sha256(), 0
    source.seek(0)
    while piece := source.read(PIECE):
        digest.update(piece)
        size += len(piece)
    ask = {"sha256": digest.hexdigest(), "size": size}
    staged = http.json("POST", "/v1/delta/staging", json=ask)
    session = new_session()
    book = UrlBook(
        {"": staged["url"]}, lambda _: {"": http.json("POST", "/v1/delta/staging", json=ask)["url"]}
    )

    def put(url: str):
        source.seek(0)
        return session.put(
            url,
            data=source,
            headers={
                "x-amz-checksum-sha256": base64.b64encode(digest.digest()).decode(),
                "Content-Length": str(size),
            },
            timeout=config.stage_timeout,
        )

    response = with_renewal(book, "", put)
    if response is None or response.status_code >= 300:
        status = response and response.status_code
        raise HyCloudError(f"staging the delta failed ({status})", code="staging-failed")
    return staged["staged"]
