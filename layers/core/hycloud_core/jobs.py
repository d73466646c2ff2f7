"""Delta jobs: names and staging files shared by the controller, the workflow and the delta function.

A job id is derived from what the job computes (user, path, the two content hashes, and the
signature when there is one) and the day, so submitting the same request twice names the same
Step Functions execution and starts one job (idempotent submission), while a request on a later
day, after upkeep has removed the job's staging files, starts a fresh one.
"""

from __future__ import annotations

import hashlib
import os
import re
import time

from .errors import BadRequestError

_JOB = re.compile(r"^(dl|ul)-[0-9a-f]{40}$")


def job_id(kind: str, user: str, path: str, new_hash: str, base_hash: str, extra: bytes = b"") -> str:
    day = str(int(time.time() // 86400))
    key = hashlib.sha256("\0".join([user, path, new_hash, base_hash, day]).encode() + extra).hexdigest()[:40]
    return f"{kind}-{key}"


def checked_job_id(value: object) -> str:
    if not isinstance(value, str) or not _JOB.match(value):
        raise BadRequestError("job id is malformed", code="bad-job")
    return value


def staging_file(staging_dir: str, job: str, suffix: str) -> str:
    return os.path.join(staging_dir, f"{checked_job_id(job)}.{suffix}")


def base_cache_name(content_hash: str) -> str:
    """Relay-cache name of an older version fetched as the base of a delta."""
    return f"base#{content_hash}"
