"""Delta jobs on EFS (seed 000 §III-B), run by the delta workflow after the relay fetched the files.

`encode` (delta download): the new version is in the relay cache; with a base version there too
the delta is version-aware (zstd patch-from), otherwise rsync-style against the client's
checksum list in staging. `apply` (delta upload): the client's delta patched onto the base,
verified against the declared content hash, kept in the relay cache on EFS and linked at the path
in one leased step only if the path still holds the base, so a failed job changes nothing a user
can see. The upload is acknowledged then; `settle`, started right after, puts the new version in
S3 (hycloud_core/fs/settle.py). Failures are raised as exception classes that
hycloud_core.jobs.FAILURES names.
The event is parsed into its spec (hycloud_core.jobs.specs) on entry: a malformed one fails there.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import BinaryIO

from hycloud_core import content, paths
from hycloud_core.atomic import atomic_open
from hycloud_core.config import InstanceConfig
from hycloud_core.delta import level as zlevel
from hycloud_core.delta import versioned
from hycloud_core.errors import ConflictError
from hycloud_core.fs.relay_cache import RelayCache
from hycloud_core.hashing_writer import HashingWriter
from hycloud_core.jobs.names import (
    HashMismatch,
    VersionMismatch,
    base_cache_name,
    delta_object_key,
    save_outcome,
    staging_file,
)
from hycloud_core.jobs.specs import (
    DeltaDownloadSpec,
    DeltaSpec,
    DeltaUploadSpec,
    SettleSpec,
    delta_spec,
)
from hycloud_core.observability import count_bytes, job_duration, observed

# A cold start is this module's imports: what only some jobs need (boto3 and an S3 client when a
# version is not in the relay cache, the filesystem for uploads, erasure decoding for coded
# files) is imported by the job that needs it, so a version-aware delta from the cache never pays for it.
CONFIG = InstanceConfig()
MAX_API_BODY = 4 * 1024 * 1024
_LOOKUPS = ThreadPoolExecutor(1, thread_name_prefix="hycloud-lookup")  # kept across invocations


@cache
def s3():
    """The S3 client, made on first use (boto3's import and client set-up are ~0.3-0.5 s)."""
    import boto3

    return boto3.client("s3")


def s3_efs_rate(spec: DeltaSpec) -> float | None:
    """Bytes per second of the relay fetches this job waited for (misses only), from their reports."""
    fetched = spec.fetched or []
    reports = [f.get("Payload", f) for f in (fetched if isinstance(fetched, list) else [fetched])]
    misses = [r for r in reports if isinstance(r, dict) and not r.get("hit") and r.get("seconds")]
    seconds = sum(r["seconds"] for r in misses)
    return sum(r["size"] for r in misses) / seconds if seconds > 0 else None


def unstage(spec: DeltaSpec, suffix: str) -> None:
    """Bring what the client staged in S3 (a checksum list or delta over one API request) to the
    job's EFS staging file, streamed and checked against the sha256 it is named by."""
    target = staging_file(CONFIG.staging_dir, spec.job_name, suffix)
    if not spec.staged_key or os.path.exists(target):
        return
    digest = hashlib.sha256()
    body = s3().get_object(Bucket=CONFIG.bucket, Key=spec.staged_key)["Body"]
    with atomic_open(target) as out:
        for piece in body.iter_chunks(1 << 20):
            digest.update(piece)
            out.write(piece)
        if digest.hexdigest() != spec.staged_sha256:  # nothing replaced: the temporary goes
            raise HashMismatch("the staged object is not what the client named")
    s3().delete_object(Bucket=CONFIG.bucket, Key=spec.staged_key)


def publish_large(job: str, path: str, always: bool = False) -> str | None:
    """A delta over one API response also goes to S3, for the client to fetch by presigned URL;
    `always` at a data instance, whose EFS the controller cannot read."""
    if not always and os.path.getsize(path) <= MAX_API_BODY:
        return None
    key = delta_object_key(job)
    s3().upload_file(path, CONFIG.bucket, key)  # multipart, streamed from EFS
    return key


class FetchFailed(Exception):
    """A version the job needs could not be read (its Step Functions error name, as for the relay)."""


class TeeToCache:
    """The new version read once, front to back, straight from S3 (no separate relay step), and
    written to the relay cache as it goes: published there only if its content hash is right, so
    the next job finds it as the client's base and relay downloads find it too."""

    def __init__(self, cache: RelayCache, name: str, content_hash: str, url: str | None = None) -> None:
        self.cache, self.name, self.content_hash = cache, name, content_hash
        self.size, self.body = _open_url(url) if url else _open_object(content_hash)
        fd, self.tmp = tempfile.mkstemp(prefix=".hc-tmp-", dir=cache.dir)
        self.copy, self.hasher, self.done = os.fdopen(fd, "wb"), content.PartHasher(), 0

    def read(self, n: int = -1) -> bytes:
        parts, want = [], n
        while want != 0 and (piece := self.body.read(want if want > 0 else None)):
            parts.append(piece)
            want = want - len(piece) if want > 0 else 0
        data = b"".join(parts)
        self.done += len(data)
        self.copy.write(data)
        self.hasher.update(data)
        return data

    def close(self) -> None:
        """Publish the copy when all of it was read and it is the version named; drop it otherwise."""
        self.copy.close()
        self.body.close()
        if self.done == self.size and self.hasher.hexdigest() == self.content_hash:
            self.cache.publish(self.name, self.tmp, self.content_hash)
        elif os.path.exists(self.tmp):
            os.unlink(self.tmp)


def _open_object(content_hash: str) -> tuple[int, BinaryIO]:
    """(size, body) of a stored version, through the S3 client."""
    from botocore.exceptions import ClientError

    try:
        response = s3().get_object(Bucket=CONFIG.bucket, Key=content.object_key(content_hash))
    except ClientError as err:
        raise FetchFailed(f"the new version could not be read: {err}") from None
    return response["ContentLength"], response["Body"]


def _open_url(url: str) -> tuple[int, BinaryIO]:
    """(size, body) of a stored version by the presigned URL the controller gave a direct job:
    plain HTTP from the standard library, so a cold function need not load boto3 (~0.5 s) first."""
    import urllib.error
    import urllib.request

    try:
        response = urllib.request.urlopen(url, timeout=60)
    except (urllib.error.URLError, OSError) as err:
        raise FetchFailed(f"the new version could not be read: {err}") from None
    return int(response.headers["Content-Length"]), response


def _rebuild_coded(spec: DeltaDownloadSpec, cache: RelayCache) -> None:
    """A coded new version decoded from its blocks into the relay cache (this region's first)."""
    from hycloud_core.coded import job as coded_job
    from hycloud_core.coded.reassemble import reassemble

    source = spec.source.to_event()
    layout = coded_job.layout(source, s3(), CONFIG.bucket, cache)
    fd, tmp = tempfile.mkstemp(prefix=".hc-tmp-", dir=cache.dir)
    try:
        with os.fdopen(fd, "wb") as out:
            got, _ = reassemble(layout, coded_job.blocks(source), s3().meta.region_name, out)
        if got != spec.content_hash:
            raise FetchFailed("the new version's blocks do not make its content")
        cache.publish(spec.cache_name, tmp, got)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _new_version(spec: DeltaDownloadSpec, cache: RelayCache) -> tuple[BinaryIO | TeeToCache, int]:
    """The new version from the relay cache if there, else streamed from S3 into it (a coded one
    is rebuilt into it first)."""
    if not cache.link_as(spec.cache_name, base_cache_name(spec.content_hash), spec.content_hash):
        if not spec.source.coded:
            tee = TeeToCache(cache, spec.cache_name, spec.content_hash, spec.new_url)
            return tee, tee.size
        _rebuild_coded(spec, cache)  # published there, or raises
    path = cache.path(spec.cache_name)
    return open(path, "rb"), os.path.getsize(path)  # noqa: SIM115 - closed by encode()


def _level(spec: DeltaDownloadSpec, size: int) -> int:
    """The zstd level the job was given, held to the CPU budget (level.cap); a spec from before
    levels were asked for, or a bad one, gets the default."""
    try:
        return zlevel.cap(zlevel.DEFAULT_LEVEL if spec.level is None else spec.level, size)
    except ValueError:
        return zlevel.DEFAULT_LEVEL


def encode(spec: DeltaDownloadSpec) -> dict:
    cache, job = RelayCache(CONFIG.cache_dir), spec.job_name
    os.makedirs(CONFIG.staging_dir, exist_ok=True)  # a version-aware job is the first to stage
    unstage(spec, "sig")
    out_path = staging_file(CONFIG.staging_dir, job, "delta")
    tmp = f"{out_path}.{uuid.uuid4().hex}.tmp"  # the same job may run twice at once (started direct)
    started = time.perf_counter()
    new, new_size = _new_version(spec, cache)
    new_from = "cache" if not isinstance(new, TeeToCache) else "url" if spec.new_url else "s3"
    level = _level(spec, new_size)
    try:
        with open(tmp, "wb") as out:
            if spec.base_hash and spec.base_cache_name:
                base_path = cache.path(spec.base_cache_name)
                with open(base_path, "rb") as base:
                    size = versioned.encode(base, os.path.getsize(base_path), new, new_size, out, level=level)
                kind = "version"
            else:
                from hycloud_core.delta import delta as rsync_delta

                with open(staging_file(CONFIG.staging_dir, job, "sig"), "rb") as sig:
                    size = rsync_delta(sig.read(), new, out).compressed_bytes
                kind = "rsync"
    finally:
        new.close()
    os.replace(tmp, out_path)
    count_bytes("DeltaSavedBytes", new_size - os.path.getsize(out_path))
    return {
        "job": job,
        "kind": kind,
        **({"level": level} if kind == "version" else {}),
        "delta_size": os.path.getsize(out_path),
        "reported": size,
        "s3_efs_rate": s3_efs_rate(spec),
        "encode_seconds": time.perf_counter() - started,  # the work itself, for overhead breakdowns
        "new_from": new_from,
        "instance": os.environ.get("AWS_REGION"),  # where it ran: at home or a data instance
        **({"delta_key": key} if (key := publish_large(job, out_path, spec.publish_delta)) else {}),
    }


def _patch(base: BinaryIO, delta: BinaryIO, out: BinaryIO) -> tuple[int, str, str]:
    """The patched file's size, content hash and plain sha256, taken as its bytes pass
    (hashing_writer). The version-aware patcher writes through the writer; the rsync-style one
    writes by file descriptor (faster), so the file is read once more after it, for the hashes."""
    from hycloud_core.delta.apply import apply_delta, is_versioned

    head = delta.read(4)
    delta.seek(0)
    if is_versioned(head):
        writer = HashingWriter([out.write], parts=True, sha256=True)
        try:  # the content hash is checked by the caller: the delta's own sha256 is not taken too
            size = versioned.apply(base, delta, writer, check=False)
        finally:
            writer.close()
    else:
        size = apply_delta(base, delta, out)
        out.flush()
        writer = HashingWriter([], parts=True, sha256=True)
        try:
            with open(out.name, "rb") as again:
                while piece := again.read(content.PART_SIZE):
                    writer.write(piece)
        finally:
            writer.close()
    return size, writer.content_hash, writer.sha256


def apply(spec: DeltaUploadSpec) -> dict:
    """Patch, verify and link the new version, acknowledged once its bytes are on EFS (durable
    there: EFS keeps them across zones once the file is closed). Content not stored yet is kept
    in the relay cache as its only copy until the settle job (`settle`, started by whoever ran
    this job) has put it in S3; meanwhile its record and link say `settling`."""
    from hycloud_core.fs import FileSystem
    from hycloud_core.store.objects import Objects
    from hycloud_core.store.records import Records

    cache, job = RelayCache(CONFIG.cache_dir), spec.job_name
    os.makedirs(CONFIG.staging_dir, exist_ok=True)
    clock = _Clock()
    unstage(spec, "delta")
    clock.mark("unstage")
    records = Records(CONFIG.table)
    # whether the content is stored already is asked while the patch runs (a network wait)
    lookup = _LOOKUPS.submit(Objects(records.table, s3(), CONFIG.bucket).get, spec.content_hash)
    fd, tmp = tempfile.mkstemp(prefix=".hc-tmp-", dir=cache.dir)
    os.close(fd)  # opened by name: the rsync-style patch reads its output again by name
    try:
        with (
            open(cache.path(spec.base_cache_name or ""), "rb") as base,
            open(staging_file(CONFIG.staging_dir, job, "delta"), "rb") as delta,
            open(tmp, "wb") as out,
        ):
            size, got, sha256 = _patch(base, delta, out)
            count_bytes("DeltaSavedBytes", size - os.fstat(delta.fileno()).st_size)
        clock.mark("patch")
        known = lookup.result()
        clock.mark("lookup")
        if got != spec.content_hash:
            raise HashMismatch("the patched file does not have the declared content hash")
        settling = known is None or "settling" in known
        kept = _keep(cache, tmp, got, pinned=settling)
        fs = FileSystem.deployed(CONFIG, spec.user, s3(), records)
        try:
            entry = fs.commit_stored(
                spec.path, got, size, expect=spec.base_hash, sha256=sha256, settling=settling
            )
        except ConflictError as err:  # a copy kept for nothing: the upkeep releases it (settle_late)
            if err.code != "version-mismatch":
                raise
            raise VersionMismatch("the path no longer holds the base version") from None
        clock.mark("commit")
        cache.link_as(paths.cache_name(spec.user, spec.path), kept, got)  # the next job's version
        settle = SettleSpec(cache_name=kept, content_hash=got, user=spec.user, path=spec.path)
        return {
            "job": job,
            "entry": entry.to_dict(),
            "s3_efs_rate": s3_efs_rate(spec),
            "steps": clock.steps,  # where the job's time went, for overhead breakdowns
            **({"settle": settle.to_event()} if known is None else {}),
        }
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _keep(cache: RelayCache, tmp: str, content_hash: str, pinned: bool) -> str:
    """The patched file in the relay cache under its content's name (where a delta job looks for
    a base), `pinned` (a version not in S3 yet) until it settles. A copy there already is kept, and
    pinned too when this one would be (its own upload may have failed and left it unpinned)."""
    name = base_cache_name(content_hash)
    if not cache.is_ready(name, content_hash):
        cache.publish(name, tmp, content_hash, settling=pinned)
    elif pinned:
        cache.pin(name, content_hash)
    return name


def settle(spec: SettleSpec) -> dict:
    """The version a delta upload kept on EFS, put in S3 (hycloud_core.fs.settle)."""
    from hycloud_core.fs.settle import settle as settle_version
    from hycloud_core.store.objects import Objects
    from hycloud_core.store.records import Records

    objects = Objects(Records(CONFIG.table).table, s3(), CONFIG.bucket)
    return settle_version(RelayCache(CONFIG.cache_dir), objects, spec.cache_name, spec.content_hash)


class _Clock:
    """Seconds spent in each named step of a job, in order."""

    def __init__(self) -> None:
        self.last, self.steps = time.perf_counter(), {}

    def mark(self, step: str) -> None:
        now = time.perf_counter()
        self.steps[f"cloud_{step}"] = now - self.last
        self.last = now


def _process_age() -> float | None:
    """Seconds since this process started (Linux), for cold-start breakdowns."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            return float(f.read().split()[0]) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def warm(event: dict) -> dict:
    """Nothing: a caller expecting a delta job soon starts the function's container ahead of it.
    Says how old the process is and how long ago its imports ended (cold-start breakdowns)."""
    return {"warm": True, "process_age": _process_age(), "since_imports": time.monotonic() - IMPORTED}


@observed
def handler(event: dict, context: object) -> dict:
    if event.get("action") == "warm":
        return warm(event)
    spec = delta_spec(event)  # a malformed event fails here, naming what is wrong
    if isinstance(spec, SettleSpec):  # not a job the controller follows: nothing saved for it
        with job_duration("delta-settle"):
            return settle(spec)
    with job_duration(f"delta-{spec.ACTION}"):
        result = encode(spec) if isinstance(spec, DeltaDownloadSpec) else apply(spec)
    # kept beside the job's files, as a direct run's is: the controller reads how the job ended from
    # EFS, not Step Functions (two DescribeExecution calls, ~30 ms of every request that finds it)
    save_outcome(CONFIG.staging_dir, spec.job_name, {"status": "SUCCEEDED", "output": json.dumps(result)})
    return result


IMPORTED = time.monotonic()  # the module's imports ended here
