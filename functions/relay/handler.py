"""Relay fetch: copy a large file's S3 object into the EFS relay cache (seed 000 §III-B).

Run as a Step Functions task. A file larger than one function may copy in its time runs as a
Map over byte ranges (`ranges.py`: action `range` per iteration, then `finish`). An erasure-coded
file (event `erasure_ref`: its layout's name in the relay cache; `instances`: region and bucket
of each) is decoded from k blocks per chunk instead, this region's first. The object is streamed to a temporary file that is verified against
the content hash and only then published, so a reader never sees a partial or wrong copy; a copy
of the same content already there is a hit.

At a data instance (the user's optimal one, docs/GEO.md) the controller cannot read this region's
EFS: its layout comes in this region's bucket (`erasure_key`), the file made whole also goes
there (`publish_key`, completed only once its hash is right) for the client to read by presigned
ranges, and the run is metered in the home table the event names (`table`: name and region).
Each event is parsed into its spec (hycloud_core.jobs.specs.RelaySpec) on entry.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import Counter
from contextlib import suppress
from functools import cache

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError
from ranges import copy_range, finish

from hycloud_core import content, reach
from hycloud_core.coded import job as coded_job
from hycloud_core.coded.reassemble import reassemble
from hycloud_core.config import InstanceConfig
from hycloud_core.cost.relay_meter import record_run
from hycloud_core.errors import BadRequestError
from hycloud_core.fs.relay_cache import RelayCache
from hycloud_core.jobs.names import base_cache_name
from hycloud_core.jobs.queue import Pacer
from hycloud_core.jobs.specs import RelaySpec, TableAt
from hycloud_core.observability import count_bytes, job_duration, logger, observed
from hycloud_core.relay import transit_key
from hycloud_core.store.multipart import ObjectWriter

CONFIG = InstanceConfig()
s3 = boto3.client("s3")
# A copy from another region: parts large enough that a large object is few calls of the reach function.
TRANSIT = TransferConfig(
    multipart_threshold=512 * 1024 * 1024, multipart_chunksize=512 * 1024 * 1024, max_concurrency=4
)
REGION = s3.meta.region_name


@cache
def _table(name: str, region: str | None):
    return reach.resource("dynamodb", region).Table(name)


def table_of(named: TableAt | None):
    """The home table: this stack's own, or, at a data instance, the one the event names."""
    return _table(named.name, named.region) if named else _table(CONFIG.table, None)


def _object_key(spec: RelaySpec) -> str:
    """The object to copy: the one the event names, else the version's content address."""
    return spec.key or content.object_key(spec.content_hash or "")


def _readable(spec: RelaySpec, key: str) -> tuple[str, str]:
    """Bucket and key to read the object from: another region's object (the home bucket's, at a
    data instance) is first copied into this instance's bucket by S3 itself, a copy the reach
    function carries (the VPC's S3 endpoint reaches this region only)."""
    bucket, region = spec.source.bucket, spec.source.bucket_region
    if not region or region == REGION:
        return bucket or CONFIG.bucket, key
    local = transit_key(key)
    reach.client("s3", carry=True).copy(
        {"Bucket": bucket, "Key": key},
        CONFIG.bucket,
        local,
        SourceClient=reach.client("s3", region),
        Config=TRANSIT,
    )
    return CONFIG.bucket, local


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


class _Both:
    """The decoded file written to the cache's temporary file and, at a data instance, to the
    object the client will read (parts sent as they fill)."""

    def __init__(self, out, store: ObjectWriter | None) -> None:
        self.writes = [w.write for w in (out, store) if w is not None]

    def write(self, data: bytes) -> int:
        for write in self.writes:
            write(data)
        return len(data)


def _reassembled(
    spec: RelaySpec, directory: str, store: ObjectWriter | None, tally: Counter
) -> tuple[str, str, int]:
    """The coded file decoded to a temporary file (and `store`); with its content hash and size."""
    source = spec.source.to_event()
    layout = coded_job.layout(source, s3, CONFIG.bucket, RelayCache(CONFIG.cache_dir))
    fd, tmp = tempfile.mkstemp(prefix=".hc-tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            got, size = reassemble(layout, coded_job.blocks(source), REGION, _Both(out, store), tally)
        return tmp, got, size
    except BaseException:
        os.unlink(tmp)
        raise


def _stored(key: str) -> bool:
    with suppress(ClientError):
        s3.head_object(Bucket=CONFIG.bucket, Key=key)
        return True
    return False


def _published(spec: RelaySpec, cached: str) -> dict:
    """At a data instance: the file in this region's bucket too (from the cache when it was a hit)."""
    key = spec.publish_key
    if not key:
        return {}
    if not _stored(key):
        s3.upload_file(cached, CONFIG.bucket, key)
    return {"published": key}


def _range(spec: RelaySpec, event: dict) -> tuple[dict, int]:
    bucket = spec.source.bucket or CONFIG.bucket
    answer = copy_range(s3, bucket, _object_key(spec), RelayCache(CONFIG.cache_dir), event)
    return answer, answer["size"]


def _finish(spec: RelaySpec, event: dict) -> tuple[dict, int]:
    answer = finish(RelayCache(CONFIG.cache_dir), event)
    count_bytes("BytesRelayed", answer["size"])
    return answer, 0  # its bytes were counted by the ranges that copied them


def _whole(spec: RelaySpec, event: dict) -> tuple[dict, int]:
    answer = _fetch(spec)
    return answer, 0 if answer["hit"] else answer["size"]


@observed
def handler(event: dict, context) -> dict:
    event = {**event, **(event.get("source") or {})}  # a delta job's base: where and how to fetch it
    actions = {"fetch": _whole, "range": _range, "finish": _finish}
    action = event.get("action", "fetch")
    if action not in actions:
        raise BadRequestError(f"unknown relay action {action!r}")
    spec = RelaySpec.from_event(event)  # a malformed event fails here, naming what is wrong
    with job_duration("relay" if action == "fetch" else f"relay-{action}") as timer:
        answer, copied = actions[action](spec, event)  # a range's piece is the event's own
    try:  # the cost report's figures; a run that worked is not failed for them
        record_run(table_of(spec.source.table), copied, timer.ms, int(context.memory_limit_in_mb))
    except ClientError:
        logger.warning("relay run not recorded", exc_info=True)
    return answer


def _fetch(spec: RelaySpec) -> dict:
    cache, name = RelayCache(CONFIG.cache_dir), spec.cache_name
    # a version the cache holds under its content's name (a delta upload's, its only copy until it
    # settles in S3; a delta job's base) is linked under this name, not copied again
    if spec.content_hash and cache.link_as(name, base_cache_name(spec.content_hash), spec.content_hash):
        os.utime(cache.path(name))
        return {
            "cache_name": name,
            "hit": True,
            "size": os.path.getsize(cache.path(name)),
            "seconds": 0.0,
            "instance": REGION,
            **_published(spec, cache.path(name)),
        }
    key = _object_key(spec)
    started, tally = time.perf_counter(), Counter()
    if spec.source.coded:  # from k blocks per chunk, this region's first
        tmp, got, size, published = _decoded(spec, cache, tally)
    else:
        pacer = Pacer(
            table_of(spec.source.table),
            spec.worker,
            spec.throttle_bps or os.environ.get("HYCLOUD_RELAY_THROTTLE_BPS"),
        )
        tmp, got, size = _copy(*_readable(spec, key), cache.dir, pacer)
        published = {}
    seconds = time.perf_counter() - started  # the S3->EFS rate clients feed into eq. 2
    if spec.content_hash and got != spec.content_hash:
        os.unlink(tmp)
        raise BadRequestError(f"object {key} has content hash {got}, expected {spec.content_hash}")
    cache.publish(name, tmp, got)
    count_bytes("BytesRelayed", size)
    logger.info("cached", extra={"cache_name": name, "size": size})
    return {
        "cache_name": name,
        "hit": False,
        "size": size,
        "content_hash": got,
        "seconds": seconds,
        "instance": REGION,
        **({"blocks_from": dict(tally)} if tally else {}),
        **published,
    }


def _decoded(spec: RelaySpec, cache: RelayCache, tally: Counter) -> tuple:
    """A coded file decoded into a temporary cache file and, with `publish_key`, into that object,
    which is completed only when the content hash is right (aborted otherwise: no object, no parts)."""
    key = spec.publish_key
    store = ObjectWriter(s3, CONFIG.bucket, key) if key and not _stored(key) else None
    try:
        tmp, got, size = _reassembled(spec, cache.dir, store, tally)
    except BaseException:
        if store is not None:
            store.abort()
        raise
    if store is not None and got == spec.content_hash:
        store.complete()
    elif store is not None:
        store.abort()  # the caller raises: the blocks do not make the file
    return tmp, got, size, ({"published": key} if key else {})
