"""Relay fetch: copy a large file's S3 object into the EFS relay cache (seed 000 §III-B).

Run as a Step Functions task. A file larger than one function may copy in its time runs as a
Map over byte ranges (`ranges.py`: action `range` per iteration, then `finish`). An erasure-coded
file (event `erasure_ref`: its layout's name in the relay cache; `instances`: region and bucket
of each) is decoded from k blocks per chunk instead, this region's first. The object is streamed to a temporary file that is verified against
the content hash and only then published, so a reader never sees a partial or wrong copy; a copy
of the same content already there is a hit.
"""

from __future__ import annotations

import os
import tempfile
import time

import boto3
from botocore.exceptions import ClientError
from ranges import copy_range, finish

from hycloud_core import content
from hycloud_core.coded_layout import CodedLayout
from hycloud_core.coded_reassemble import reassemble
from hycloud_core.config import InstanceConfig
from hycloud_core.cost.relay_meter import record_run
from hycloud_core.errors import BadRequestError
from hycloud_core.events import RelayFetchRequest
from hycloud_core.fs.blocks import BlockStore
from hycloud_core.fs.relay_cache import RelayCache
from hycloud_core.instances import Instance
from hycloud_core.observability import count_bytes, job_duration, logger, observed
from hycloud_core.store.queue_records import Pacer

CONFIG = InstanceConfig()
s3 = boto3.client("s3")
table = boto3.resource("dynamodb").Table(CONFIG.table)


def _copy(bucket: str, key: str, directory: str, pacer: Pacer) -> tuple[str, str, int]:
    """Stream the object to a temporary file; return it with its content hash and size.

    The pacer holds the run to its worker's throughput limit and reports its rate (SCHEDULING.md).
    """
    fd, tmp = tempfile.mkstemp(prefix=".hc-tmp-", dir=directory)
    hasher, size = content.PartHasher(), 0
    try:
        with os.fdopen(fd, "wb") as out:
            for piece in s3.get_object(Bucket=bucket, Key=key)["Body"].iter_chunks(1024 * 1024):
                out.write(piece)
                hasher.update(piece)
                size += len(piece)
                pacer.add(len(piece))
        pacer.finish()
        return tmp, hasher.hexdigest(), size
    except BaseException:
        os.unlink(tmp)
        raise


def _layout(event: dict) -> CodedLayout:
    return CodedLayout.from_dict(RelayCache(CONFIG.cache_dir).layout(event["erasure_ref"]))


def _reassembled(event: dict, directory: str) -> tuple[str, str, int]:
    """The coded file decoded to a temporary file; with its content hash and size."""
    instances = [Instance(i["region"], i["bucket"], "", "") for i in event["instances"]]
    store = BlockStore(instances, lambda region: boto3.client("s3", region_name=region))
    fd, tmp = tempfile.mkstemp(prefix=".hc-tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            got, size = reassemble(_layout(event), store, s3.meta.region_name, out)
        return tmp, got, size
    except BaseException:
        os.unlink(tmp)
        raise


def _range(event: dict) -> tuple[dict, int]:
    request = RelayFetchRequest(event)
    key = request.key or content.object_key(request.content_hash)
    answer = copy_range(s3, request.bucket or CONFIG.bucket, key, RelayCache(CONFIG.cache_dir), event)
    return answer, answer["size"]


def _finish(event: dict) -> tuple[dict, int]:
    answer = finish(RelayCache(CONFIG.cache_dir), event)
    count_bytes("BytesRelayed", answer["size"])
    return answer, 0  # its bytes were counted by the ranges that copied them


def _whole(event: dict) -> tuple[dict, int]:
    answer = _fetch(event)
    return answer, 0 if answer["hit"] else answer["size"]


@observed
def handler(event: dict, context) -> dict:
    actions = {"fetch": _whole, "range": _range, "finish": _finish}
    action = event.get("action", "fetch")
    if action not in actions:
        raise BadRequestError(f"unknown relay action {action!r}")
    with job_duration("relay" if action == "fetch" else f"relay-{action}") as timer:
        answer, copied = actions[action](event)
    try:  # the cost report's figures; a run that worked is not failed for them
        record_run(table, copied, timer.ms, int(context.memory_limit_in_mb))
    except ClientError:
        logger.warning("relay run not recorded", exc_info=True)
    return answer


def _fetch(event: dict) -> dict:
    event = {**event, **(event.get("source") or {})}  # a delta job's coded base: how to rebuild it
    request = RelayFetchRequest(event)
    cache = RelayCache(CONFIG.cache_dir)
    if request.content_hash and cache.is_ready(request.cache_name, request.content_hash):
        os.utime(cache.path(request.cache_name))
        return {
            "cache_name": request.cache_name,
            "hit": True,
            "size": os.path.getsize(cache.path(request.cache_name)),
            "seconds": 0.0,
        }
    key = request.key or content.object_key(request.content_hash)
    started = time.perf_counter()
    if event.get("erasure_ref"):  # a coded file: decoded from k blocks, this region's first
        tmp, got, size = _reassembled(event, cache.dir)
    else:
        pacer = Pacer(
            table,
            event.get("worker"),
            event.get("throttle_bps") or os.environ.get("HYCLOUD_RELAY_THROTTLE_BPS"),
        )
        tmp, got, size = _copy(request.bucket or CONFIG.bucket, key, cache.dir, pacer)
    seconds = time.perf_counter() - started  # the S3->EFS rate clients feed into eq. 2
    if request.content_hash and got != request.content_hash:
        os.unlink(tmp)
        raise BadRequestError(f"object {key} has content hash {got}, expected {request.content_hash}")
    cache.publish(request.cache_name, tmp, got)
    count_bytes("BytesRelayed", size)
    logger.info("cached", extra={"cache_name": request.cache_name, "size": size})
    return {
        "cache_name": request.cache_name,
        "hit": False,
        "size": size,
        "content_hash": got,
        "seconds": seconds,
    }
