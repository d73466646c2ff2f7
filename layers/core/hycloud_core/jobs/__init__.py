"""Relay and delta jobs, shared by the controller (which keys, queues and reports them) and the
functions that run them: `names` (keys, execution names, staging files, failure reports),
`specs` (what each kind of job is told, checked at both ends), `ledger` (which attempt serves
a job) and `executions` (Step Functions executions of any instance).

The package re-exports `names`, so `from hycloud_core import jobs; jobs.job_key(...)` reads as
before; the others are imported by name (the ledger and executions need boto3-facing code a
delta function's cold start should not pay for).
"""

from __future__ import annotations

from .names import (
    BUNDLE_JOB_PATTERN,
    FAILURES,
    JOB_ID_PATTERN,
    KINDS,
    STAGED_MAX,
    UNKNOWN_FAILURE,
    HashMismatch,
    VersionMismatch,
    base_cache_name,
    checked_bundle_job,
    checked_job_id,
    delta_object_key,
    execution_name,
    failure,
    job_key,
    key_of,
    load_outcome,
    new_bundle_job,
    relay_job_key,
    save_outcome,
    staged_key,
    staging_file,
)

__all__ = [
    "BUNDLE_JOB_PATTERN",
    "FAILURES",
    "JOB_ID_PATTERN",
    "KINDS",
    "STAGED_MAX",
    "UNKNOWN_FAILURE",
    "HashMismatch",
    "VersionMismatch",
    "base_cache_name",
    "checked_bundle_job",
    "checked_job_id",
    "delta_object_key",
    "execution_name",
    "failure",
    "job_key",
    "key_of",
    "load_outcome",
    "new_bundle_job",
    "relay_job_key",
    "save_outcome",
    "staged_key",
    "staging_file",
]
