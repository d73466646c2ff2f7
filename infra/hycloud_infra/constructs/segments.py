"""Cold small files packed into S3 segments (docs/SEGMENTS.md): the settings and permissions.

The upkeep function packs a user's small files unused for `hycloud:segmentAfterDays` (default 7;
"none" turns packing off) into segment objects under `segments/` and cleans them in its hourly
walk (functions/maintenance, hycloud_core.fs.segments); `hycloud:segmentMinLiveShare` (0.5) is the
live share under which the cleaner compacts a segment, `hycloud:segmentBytes` (4 MiB) a segment's
size. Every function that reads a namespace's small files may meet a stub, and reads its segment
by range: the controller, delta and standby replicator read the whole bucket already; the tree and
bundle jobs (an overwrite keeps the version it replaces) are granted `segments/*` here.
"""

from __future__ import annotations

from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hycloud_core.fs.segments import ENV_AFTER_S, ENV_BYTES, ENV_MIN_LIVE

AFTER_DAYS, MIN_LIVE, SEGMENT_BYTES = (
    "hycloud:segmentAfterDays",
    "hycloud:segmentMinLiveShare",
    "hycloud:segmentBytes",
)
DEFAULT_AFTER_DAYS = 7  # cost/segments_bill.py: sooner than 30 pays on every mix of bench/cost_bench.py
PREFIX = "segments/*"  # hycloud_core.fs.segments_format.PREFIX
DAY_S = 86400


def segment_env(scope: Construct) -> dict[str, str]:
    """The upkeep's segment settings from context; packing is off when the days are "none"."""
    ctx = scope.node.try_get_context
    days = ctx(AFTER_DAYS)
    days = DEFAULT_AFTER_DAYS if days is None else days
    env: dict[str, str] = {}
    if str(days).lower() != "none":
        if float(days) < 0:
            raise ValueError(f"{AFTER_DAYS}={days!r}: expected days (0 or more) or none")
        env[ENV_AFTER_S] = str(int(float(days) * DAY_S))
    if (share := ctx(MIN_LIVE)) is not None:
        if not 0 <= float(share) <= 1:
            raise ValueError(f"{MIN_LIVE}={share!r}: expected a share between 0 and 1")
        env[ENV_MIN_LIVE] = str(float(share))
    if (size := ctx(SEGMENT_BYTES)) is not None:
        env[ENV_BYTES] = str(int(size))
    return env


class Segments(Construct):
    """`upkeep` packs and cleans segments: it writes, reads and deletes them."""

    def __init__(self, scope: Construct, id: str, *, upkeep: lambda_.Function, bucket: s3.IBucket) -> None:
        super().__init__(scope, id)
        self.bucket = bucket
        for name, value in segment_env(scope).items():
            upkeep.add_environment(name, value)
        bucket.grant_read(upkeep, PREFIX)
        bucket.grant_put(upkeep, PREFIX)
        bucket.grant_delete(upkeep, PREFIX)

    def allow_reads(self, *readers: lambda_.IFunction) -> None:
        """Functions that read small files by their namespace (a packed one from its segment)."""
        for fn in readers:
            self.bucket.grant_read(fn, PREFIX)
