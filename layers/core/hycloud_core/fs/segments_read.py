"""Reading a packed small file: one ranged GET of its segment, checked against the stub.

The namespace (fs/namespace.py) calls it where it would read the file's bytes, so every reader of
small files (downloads, bundles, share links, kept versions, the standby's copy) gets the file's
bytes, never the stub. The bucket is the instance's (HYCLOUD_BUCKET); boto3 is imported on the
first packed file read, so functions that never meet one do not pay for it at cold start.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from .. import constants as c
from ..errors import NotFoundError
from .segments_format import Stub, check_member


@functools.cache
def _s3() -> Any:
    import boto3

    return boto3.client("s3")


def reset() -> None:
    """Forget the cached client (tests that start a new fake S3)."""
    _s3.cache_clear()


def read_member(stub: Stub, s3: Any = None, bucket: str | None = None) -> bytes:
    """The packed file's bytes; 404 content-gone when its segment is no longer stored."""
    client = s3 or _s3()
    try:
        got = client.get_object(
            Bucket=bucket or os.environ.get(c.ENV_BUCKET, ""), Key=stub.key, Range=stub.range_header()
        )
    except client.exceptions.NoSuchKey:
        raise NotFoundError("this file's segment is no longer stored", code="content-gone") from None
    return check_member(stub, got["Body"].read())
