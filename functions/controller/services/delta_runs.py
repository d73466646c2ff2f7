"""Delta download and delta upload jobs as the delta routes ask for them (seed 000 §III-B, plus
version-aware deltas): which job a request names, where it runs (home, a data instance, or
direct in the request), and what the caller sees of it.

Bases are only content the caller can read, and every refusal reads the same whatever the hash
names, so a job tells nobody anything about content that is not theirs. Jobs are keyed by what
they compute and the version they read (hycloud_core.jobs); a job's id is usable by its owner only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import CONFIG, filesystem, namespace, objects, records, s3, user
from polling import long_poll

from hycloud_core import content, jobs, paths
from hycloud_core.delta import level as zlevel
from hycloud_core.errors import ConflictError
from hycloud_core.fs.relay_cache import RelayCache
from hycloud_core.instances import Instance
from hycloud_core.jobs.ledger import JobLedger
from hycloud_core.jobs.specs import DeltaDownloadSpec, DeltaSpec, DeltaUploadSpec, Source

from . import delta_jobs, delta_staging, optimal_instance
from .coded_files import coded_version
from .job_runs import RunOptions, Staging, delta_bytes, describe, owned, report, run

DIRECT_URL_TTL_S = 300  # a direct job starts within its request
START_WAIT_S = 5.0  # the longest a request starting a job waits for its result
DIRECT_COMPRESS_S = START_WAIT_S  # a direct job's estimated compression at its level, at most
# a delta up to this size comes inline with the job's result, saving the client a request; no
# larger: the idempotency store keeps the answer in one DynamoDB item (400 KB, base64 of 256 KiB
# is 341 KB)
INLINE_DELTA = 256 * 1024
# a delta up to this size can be an answer's whole body instead (no idempotency record, no base64):
# 4 MiB is 5.6 MB once API Gateway has it in base64, under Lambda's 6 MB answer
BODY_DELTA = 4 * 1024 * 1024

Answer = tuple[dict[str, Any], int]  # the body and status a route answers with


@dataclass(frozen=True)
class Brought:
    """What a request brought for its job: the bytes in its body, or the key and sha256 (hex) of
    what the client staged in S3 before (`data` empty)."""

    data: bytes
    digest: str
    staged_key: str | None = None


@dataclass(frozen=True)
class DeltaStart:
    """A job to start or find: `key` computing `spec` over a `size`-byte version; `staging`, what
    the request brought for it; `at`, the data instance it runs at (a coded file,
    services/optimal_instance.py), `spec` made for it."""

    key: str
    spec: DeltaSpec
    size: int
    staging: Staging | None = None
    at: Instance | None = None


def start(
    caller: APIGatewayRouter, job: DeltaStart, wait: float, extra: dict | None = None, inline: bool = True
) -> Answer:
    """Start (or find) the job; its result (200) when it ends within `wait` seconds (at most
    START_WAIT_S), which saves the client a round trip on short jobs, else 202. A caller willing
    to wait has a short job with nothing to fetch run in its request (direct). `inline`: a small
    delta comes base64 in the result (state_of)."""
    spec, direct = job.spec, None
    if job.at is None:  # the home cache and the home function: nothing to look at for a data instance
        spec = delta_jobs.cached(spec)
        direct = CONFIG.delta_function if wait > 0 and _runs_direct(spec, job.size) else None
    if direct and isinstance(spec, DeltaDownloadSpec):
        spec = _new_version_url(spec)
    options = RunOptions(
        CONFIG.delta_state_machine,
        at=job.at.delta_state_machine if job.at else None,
        size=delta_bytes(spec, job.size),
        direct=direct,
        staging=job.staging,
    )
    name = run(caller, job.key, spec, options)
    state = long_poll(
        lambda: state_of(caller, name, inline), min(wait, START_WAIT_S), lambda r: r["state"] == "running"
    )
    return {"job": name, **state, **(extra or {})}, 202 if state["state"] == "running" else 200


def _runs_direct(spec: DeltaSpec, size: int) -> bool:
    """Whether the job is one Lambda task (nothing to fetch first) short enough to run in the request
    (a high zstd level's estimated compression too: a level-19 delta of 35 MB outlasts the request)."""
    needs_base = isinstance(spec, DeltaUploadSpec) or spec.base_hash
    level = (
        spec.level if isinstance(spec, DeltaDownloadSpec) and spec.level is not None else zlevel.DEFAULT_LEVEL
    )
    compress_s = size / zlevel.cost(level, zlevel.DEFAULT_TABLE).rate
    return (
        bool(CONFIG.delta_function)
        and size <= CONFIG.delta_direct_bytes
        and compress_s <= DIRECT_COMPRESS_S
        and (not needs_base or spec.base_cached)
    )


def _new_version_url(spec: DeltaDownloadSpec) -> DeltaDownloadSpec:
    """A short-lived GET URL of the version a direct encode job reads when it is not in the relay
    cache: the function fetches it with plain HTTP instead of loading boto3 at its cold start.
    Never for queued jobs (the URL would age in the queue) nor coded files (no single object)."""
    cache, new = RelayCache(CONFIG.cache_dir), spec.content_hash
    # in the cache, maybe by its content's name only (a delta upload's version, settling still)
    if spec.source.erasure_ref or cache.link_as(spec.cache_name, jobs.base_cache_name(new), new):
        return spec
    url = s3().generate_presigned_url(
        "get_object",
        ExpiresIn=DIRECT_URL_TTL_S,
        Params={"Bucket": CONFIG.bucket, "Key": content.object_key(spec.content_hash)},
    )
    return replace(spec, new_url=url)


def _machine(caller: APIGatewayRouter, job: str) -> str | None:
    """The workflow that ran the job's attempt when not the home one (a data instance's)."""
    record = JobLedger(records().table, user(caller)).get(jobs.key_of(job))
    return record.machine if record else None


def state_of(caller: APIGatewayRouter, job: str, inline: bool = True) -> dict:
    """The job's state as the caller sees it: a delta too large for the API as a presigned S3 URL;
    with `inline`, a small delta in the answer itself, saving a request. A job at a data instance
    always leaves its delta in that instance's bucket: the URL names it there."""
    machine = _machine(caller, job)
    state = report(describe(machine or CONFIG.delta_state_machine, job))
    result = state.get("result") or {}
    key = result.pop("delta_key", None)
    if key and machine:  # at a data instance (gone from the ring since: the next request runs it anew)
        at = optimal_instance.instance_of(machine)
        if at is not None:
            result["delta_url"] = optimal_instance.url(at, key)
    elif key:
        result["delta_url"] = delta_staging.download_url(key)
    elif inline and 0 < result.get("delta_size", 0) <= INLINE_DELTA:
        delta = delta_staging.inline_delta(job, INLINE_DELTA)
        if delta is not None:
            result["delta"] = delta
    return state


def delta_body(answer: dict) -> bytes | None:
    """A ready job's whole delta when it is in home staging (any delta the API can carry: a larger
    one went to S3 and the answer names its URL), for an answer whose body is the delta itself."""
    result = answer.get("result") or {}
    size = result.get("delta_size", 0)
    if answer.get("state") != "ready" or "delta_url" in result or not 0 < size <= BODY_DELTA:
        return None
    data = delta_staging.read_delta(answer["job"], size)
    return data if data is not None and len(data) == size else None


def follow(caller: APIGatewayRouter, job_id: str, wait: float) -> dict:
    """The caller's job and its state, waited on for up to `wait` seconds while it runs."""
    job = owned(caller, job_id)
    state = long_poll(lambda: state_of(caller, job, inline=False), wait, lambda r: r["state"] == "running")
    return {"job": job, **state}


def _large(caller: APIGatewayRouter, path: str):
    link = namespace(caller).current_link(path)
    if link is None:
        raise ConflictError(f"{path} is not a large file", code="not-a-large-file")
    return link


def _readable_base(caller: APIGatewayRouter, path: str, base: str) -> bool:
    """Whether the caller can read `base` through `path` and the cloud still holds it."""
    if base not in filesystem(caller).readable_versions(path):
        return False
    return objects().is_stored(base) or bool(coded_version(namespace(caller).current_link(path), base))


def by_version(
    caller: APIGatewayRouter, path: str, base: str, level: int | None, wait: float, inline: bool = True
) -> Answer:
    """The version-aware delta from `base`, a version of `path` the caller can read, to its current
    (`inline`: as state_of's)."""
    link = _large(caller, path)
    file = {"file": {"content_hash": link.content_hash, "size": link.size}}  # no stat needed first
    if base == link.content_hash:
        return {"state": "same", "content_hash": base, **file}, 200
    if not _readable_base(caller, path, base):
        raise ConflictError(
            f"the cloud has no version of {path} with that hash; send a checksum list", code="base-unknown"
        )
    zl = zlevel.cap(level, link.size) if level is not None else zlevel.DEFAULT_LEVEL
    at = optimal_instance.instance_for(caller, link)
    if at is not None:  # it leaves its delta in its own bucket (the controller cannot read its EFS)
        key, spec = delta_jobs.version_job(
            user(caller),
            path,
            link.content_hash,
            base,
            optimal_instance.source(at, link.content_hash, link.erasure),
            zl,
        )
        spec = replace(spec, publish_delta=True, base_source=_remote_base(at, link, base))
        return start(caller, DeltaStart(key, spec, link.size, at=at), wait, file, inline)
    key, spec = delta_jobs.version_job(
        user(caller), path, link.content_hash, base, delta_jobs.coded_source(link), zl
    )
    return start(
        caller, DeltaStart(key, delta_jobs.with_coded_base(link, spec), link.size), wait, file, inline
    )


def _remote_base(at: Instance, link, base: str) -> Source:
    """How a job at `at` fetches its base: rebuilt from its blocks when coded, else read from the
    home bucket."""
    erasure = coded_version(link, base)
    if erasure:
        return optimal_instance.source(at, base, erasure)
    return Source(
        bucket=CONFIG.bucket, bucket_region=s3().meta.region_name, table=optimal_instance.home_table()
    )


def by_signature(
    caller: APIGatewayRouter, path: str, signature: Brought, wait: float, inline: bool = True
) -> Answer:
    """The rsync-style delta of `path`'s current version against the client's checksum list; the
    answer names that version (`file`, with its chunk-size state), so no stat is needed first."""
    link = _large(caller, path)
    file = {
        "file": {
            "content_hash": link.content_hash,
            "size": link.size,
            "chunk_state": link.chunk_probabilities,
        }
    }
    who, staged_key = user(caller), signature.staged_key
    key = jobs.job_key("dl", who, path, link.content_hash, "signature", signature.digest)
    spec = DeltaDownloadSpec(
        cache_name=paths.cache_name(who, path),
        content_hash=link.content_hash,
        staged_key=staged_key,
        staged_sha256=signature.digest if staged_key else None,
    )
    at = optimal_instance.instance_for(caller, link)
    if at is not None:  # the checksum list goes to that instance's bucket, as if staged there
        remote_key = staged_key or jobs.staged_key(who, signature.digest)
        source = optimal_instance.source(at, link.content_hash, link.erasure)
        spec = replace(
            spec, source=source, publish_delta=True, staged_key=remote_key, staged_sha256=signature.digest
        )
        send = Staging(None if staged_key else signature.data, at=at, key=remote_key)
        return start(caller, DeltaStart(key, spec, link.size, send, at=at), wait, file, inline)
    spec = replace(
        spec, source=delta_jobs.coded_source(link)
    )  # a coded file: the job rebuilds it from its blocks
    staging = None if staged_key else Staging(signature.data, "sig")
    return start(caller, DeltaStart(key, spec, link.size, staging), wait, file, inline)


def upload(caller: APIGatewayRouter, path: str, base: str, new: str, delta: Brought, wait: float) -> Answer:
    """Patch the client's delta onto `path`'s current version `base`, giving `new`."""
    namespace(caller).require_dir(paths.parent(path))
    link = namespace(caller).current_link(path)
    if link is None or link.content_hash != base:
        raise ConflictError(
            f"{path} does not hold the base version; make the delta against its current version",
            code="version-mismatch",
        )
    who = user(caller)
    key = jobs.job_key("ul", who, path, base, new, bytes.fromhex(delta.digest))
    spec = DeltaUploadSpec(
        user=who,
        path=path,
        cache_name=paths.cache_name(who, path),  # where the base may be cached already
        content_hash=new,
        base_hash=base,
        base_cache_name=jobs.base_cache_name(base),
        staged_key=delta.staged_key,
        staged_sha256=delta.digest if delta.staged_key else None,
    )
    spec = delta_jobs.with_coded_base(link, spec)  # the new version is stored plain
    staging = None if delta.staged_key else Staging(delta.data, "delta")
    return start(caller, DeltaStart(key, spec, link.size, staging), wait)
