"""Jobs, shared by the controller (which keys, queues and reports them), the dispatcher and the
functions that run them: `names` (keys, execution names, staging files, failure reports),
`specs` (what each kind of job is told, checked at both ends), `ledger` (which attempt serves
a job), `executions` (Step Functions executions of any instance), `queue` (the FOP queue and
its relay workers), `dispatch` (one pass that starts queued jobs) and `coded` (coded-block jobs
queued as background work).

Above the records (store/) and the scheduling maths (control/), below the filesystem (fs/, which
names a bundle's staged job) and the functions: nothing here calls back into a route.

The package re-exports `names`, so `from hycloud_core import jobs; jobs.job_key(...)` reads as
before; the others are imported by name (the ledger, queue and executions need boto3-facing code
a delta function's cold start should not pay for).
"""

from __future__ import annotations

from .names import (
    ANSWER_HEADER,
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
    "ANSWER_HEADER",
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
