"""Relay fetch: copy a large file's S3 object into the EFS relay cache (seed 000 §III-B).

Run as a Step Functions task. The object is streamed to a temporary file and renamed into
place, so a reader of the cache never sees a partial copy; a present, complete copy is a hit.
"""

from __future__ import annotations

import hashlib
import os
import tempfile

import boto3
from aws_lambda_powertools import Logger
from hycloud_core.config import InstanceConfig
from hycloud_core.errors import BadRequestError
from hycloud_core.events import RelayFetchRequest

logger = Logger(service="hycloud-relay")
CONFIG = InstanceConfig()
s3 = boto3.client("s3")
PIECE = 8 * 1024 * 1024


def _copy(bucket: str, key: str, target: str) -> tuple[int, str, str]:
    digest, size = hashlib.sha256(), 0
    os.makedirs(os.path.dirname(target), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".hc-tmp-", dir=os.path.dirname(target))
    try:
        with os.fdopen(fd, "wb") as out:
            body = s3.get_object(Bucket=bucket, Key=key)["Body"]
            for piece in body.iter_chunks(PIECE):
                digest.update(piece)
                out.write(piece)
                size += len(piece)
        return size, digest.hexdigest(), tmp
    except BaseException:
        os.unlink(tmp)
        raise


@logger.inject_lambda_context
def handler(event: dict, context: object) -> dict:
    request = RelayFetchRequest(event)
    target = os.path.join(CONFIG.cache_dir, request.cache_name)
    if os.path.exists(target) and (request.size is None or os.path.getsize(target) == request.size):
        os.utime(target)  # LRU upkeep reads atime/mtime
        return {"cache_name": request.cache_name, "hit": True, "size": os.path.getsize(target)}
    size, digest, tmp = _copy(request.bucket or CONFIG.bucket, request.key, target)
    if request.sha256 and digest != request.sha256:
        os.unlink(tmp)
        raise BadRequestError(f"object {request.key} has sha256 {digest}, expected {request.sha256}")
    os.replace(tmp, target)
    logger.info("cached", extra={"cache_name": request.cache_name, "size": size})
    return {"cache_name": request.cache_name, "hit": False, "size": size, "sha256": digest}
