"""Bundle jobs: commit a bundle staged in S3, each member on its own (docs/SCHEDULING.md).

Queued by `POST /v1/bundles?staged=<sha256>` as a transfer in the FOP queue and started by a
dispatch pass (statemachines/bundle_commit.asl.json). Event: a BundleJobSpec
(hycloud_core.jobs.specs), parsed on entry. The per-member results go to the job's outcome file in staging, where
`GET /v1/bundles/jobs` reads them (a workflow's output holds 256 KiB, a bundle's answer more).
The staged object is taken out of staging once read: a bundle is committed once.
"""

from __future__ import annotations

from typing import Any

import boto3

from hycloud_core import bundle, jobs
from hycloud_core.config import InstanceConfig
from hycloud_core.cost import access_meter
from hycloud_core.cost.thresholds import Thresholds, accept_limit
from hycloud_core.errors import HyCloudError
from hycloud_core.fs import FileSystem
from hycloud_core.fs.bundle_commit import commit_members, take_staged
from hycloud_core.jobs.specs import BundleJobSpec
from hycloud_core.observability import job_duration, logger, observed

CONFIG = InstanceConfig()
s3 = boto3.client("s3")


def _table() -> Any:
    return boto3.resource("dynamodb").Table(CONFIG.table)


def _accepted(user: str) -> int:
    """The largest small member accepted: as the controller judges it (cost/thresholds.py)."""
    fixed, configured = CONFIG.small_file_threshold_fixed, CONFIG.small_file_threshold
    found = Thresholds(_table()).in_force(user, configured, fixed)
    return accept_limit(found, configured, fixed)


@observed
def handler(event: dict, context: object) -> dict:
    spec = BundleJobSpec.from_event(event)  # a malformed event fails here, naming what is wrong
    job, user = spec.job, spec.user
    try:
        with job_duration("bundle-commit"):
            members = bundle.unpack(
                take_staged(s3, CONFIG.bucket, user, spec.staged), max_body=bundle.MAX_STAGED
            ).files
            files = commit_members(
                FileSystem.deployed(CONFIG, user, s3),
                members,
                _accepted(user),
                spec.parents,
                spec.root,
            )
            access_meter.record(_table(), user, writes=[len(data) for _, data in members])
    except HyCloudError as err:  # the bundle as a whole: every member failed
        outcome = {"user": user, "state": "failed", "error": bundle.error_entry("", err)["error"]}
        jobs.save_outcome(CONFIG.staging_dir, job, outcome)
        return {"state": "failed", "code": err.code}
    jobs.save_outcome(CONFIG.staging_dir, job, {"user": user, "state": "succeeded", "files": files})
    ok = sum(f["status"] == "ok" for f in files)
    logger.info("bundle committed", extra={"job": job, "files": len(files), "ok": ok})
    return {"state": "succeeded", "files": len(files), "ok": ok}
