"""Relay and delta jobs: keys, execution names, staging files and failure reports.

A job's key is a digest of what it computes and of the state it read (the path's current
content hash), so the same request against the same state is one job. Each attempt at a job is
its own Step Functions execution, `<key>-<attempt>`: a closed execution's name cannot be used
again (for 90 days on AWS), so a retry after a failure, or after the result is gone, needs a new
name. The attempt counter lives in the job ledger (ledger.py).

Callers learn how a job failed as a short code and a fixed message, never the cause Step
Functions records (a stack trace, and details such as sizes read from content).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from typing import Any

from ..atomic import atomic_write
from ..errors import BadRequestError, checked_match

KINDS = ("dl", "ul", "relay")
_KEY = re.compile(r"^(dl|ul|relay)-[0-9a-f]{40}$")
_JOB = re.compile(r"^((?:dl|ul|relay)-[0-9a-f]{40})-([1-9][0-9]{0,8})$")
JOB_ID_PATTERN = _JOB.pattern  # what the API document says a job id looks like
BUNDLE_JOB_PATTERN = r"^bundle-[0-9a-f]{40}-1$"  # a staged bundle's commit: one attempt, no ledger
_BUNDLE_JOB = re.compile(BUNDLE_JOB_PATTERN)


def job_key(kind: str, *parts: str | bytes) -> str:
    """Key of a job from its kind and the values it depends on (order matters)."""
    if kind not in KINDS:
        raise ValueError(f"unknown job kind {kind!r}")
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "big") + data)  # length-prefixed: no ambiguous joins
    return f"{kind}-{digest.hexdigest()[:40]}"


def relay_job_key(cache_name: str, content_hash: str) -> str:
    """Key of the relay job filling one cache entry with one version (the version the path holds)."""
    return job_key("relay", cache_name, content_hash)


def execution_name(key: str, attempt: int) -> str:
    """Step Functions execution name (≤ 80 chars of [a-z0-9-]) of one attempt at a job."""
    if not _KEY.match(key) or attempt < 1:
        raise ValueError("bad job key or attempt")
    return f"{key}-{attempt}"


def checked_job_id(value: object) -> str:
    """A job id (an execution name) from a request, or a 400."""
    return checked_match(value, _JOB, "job id is malformed", "bad-job")


def key_of(job: str) -> str:
    """The key of the job an id names."""
    match = _JOB.match(checked_job_id(job))
    assert match is not None  # checked_job_id let it through
    return match.group(1)


def new_bundle_job() -> str:
    return f"bundle-{secrets.token_hex(20)}-1"


def checked_bundle_job(value: object) -> str:
    """A bundle job's name (an execution name, not a ledger job), or a 400."""
    return checked_match(value, _BUNDLE_JOB, "bundle job id is malformed", "bad-job")


def staging_file(staging_dir: str, job: str, suffix: str) -> str:
    is_bundle = isinstance(job, str) and job.startswith("bundle-")
    name = checked_bundle_job(job) if is_bundle else checked_job_id(job)
    return os.path.join(staging_dir, f"{name}.{suffix}")


# A ready delta answered as the response's body carries the rest of the answer (the job's state,
# JSON) in this header: the controller writes it, the client reads it.
ANSWER_HEADER = "x-hycloud-answer"


def save_outcome(staging_dir: str, job: str, outcome: dict[str, Any]) -> None:
    """How a job that runs outside a workflow's output ended (atomic: concurrent runs may race)."""
    os.makedirs(staging_dir, exist_ok=True)
    atomic_write(staging_file(staging_dir, job, "outcome"), json.dumps(outcome))


def load_outcome(staging_dir: str, job: str) -> dict[str, Any] | None:
    try:
        with open(staging_file(staging_dir, job, "outcome")) as f:
            outcome: dict[str, Any] = json.load(f)
            return outcome
    except FileNotFoundError:
        return None


def base_cache_name(content_hash: str) -> str:
    """Relay-cache name of an older version fetched as the base of a delta."""
    return f"base#{content_hash}"


class HashMismatch(Exception):
    """The patched file is not the content the caller declared."""


class VersionMismatch(Exception):
    """The path no longer holds the base the delta was made against."""


# Step Functions error name (a task's exception class, or a Fail state's Error) -> code, message.
FAILURES: dict[str, tuple[str, str]] = {
    "DeltaFormatError": ("delta-invalid", "the delta is malformed or of an unknown version"),
    "DeltaMismatch": ("delta-mismatch", "the delta does not rebuild the file it describes from the base"),
    "HashMismatch": ("hash-mismatch", "the patched file does not have the declared content hash"),
    "VersionMismatch": ("version-mismatch", "the path changed while the job ran; nothing was written"),
    "FetchFailed": ("content-unavailable", "a version the job needs could not be fetched; try again"),
    "RelayFetchFailed": ("relay-failed", "the file could not be copied into the relay cache; try again"),
}
UNKNOWN_FAILURE = ("job-failed", "the job failed; nothing was written; try again")


def failure(error: str | None) -> dict[str, str]:
    """The report of a failed job: a code and a fixed message, whatever the cause said."""
    code, message = FAILURES.get(error or "", UNKNOWN_FAILURE)
    return {"code": code, "message": message}


# Checksum lists and deltas over one API request go through S3 under staging/ (expired by a
# bucket lifecycle rule): the client's by their sha256, a job's delta by the job.
STAGED_MAX = 5 * 1024**3  # one presigned PUT


def staged_key(user: str, sha256: str) -> str:
    """S3 key of a checksum list or delta a client staged, named by its sha256 (checked by S3)."""
    if not re.fullmatch(r"[0-9a-f]{64}", sha256 or ""):
        raise BadRequestError("staged must be a sha256 in hex", code="bad-staged")
    return f"staging/{user}/{sha256}"


def delta_object_key(job: str) -> str:
    """S3 key of a job's delta too large for the API, handed to the client as a presigned GET."""
    return f"staging/jobs/{checked_job_id(job)}.delta"
