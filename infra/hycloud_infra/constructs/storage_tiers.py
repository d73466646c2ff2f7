"""Storage tiers for data that is not read: EFS lifecycle management and S3 Intelligent-Tiering.

Prices are us-east-1 list prices (hycloud_core/cost/prices.json, where the cost model reads them).

EFS (every file system: namespaces, link files, relay cache, staging). A file unread for
`hycloud:efsTransitionToIA` (default 30 days) moves from Standard ($0.30/GB-month) to Infrequent
Access ($0.016), after `hycloud:efsTransitionToArchive` (default 180 days) to Archive ($0.008),
and back to Standard on its first access (reads stay fast for a file in use again). Moving into
IA costs $0.01/GB and a read from it $0.01/GB more than from Standard, so IA pays after about a
day cold. Moving into Archive costs $0.03/GB, its reads $0.03/GB more, and it bills at least 90
days: against $0.008/GB-month saved it pays back after about four months cold (six if read once),
so it starts where a file has already been unread half a year. EFS keeps files under 128 KiB and
all metadata in Standard whatever the policy (the cost model counts that). The relay cache shares
its file system's policy and fits Standard: the upkeep evicts entries (1 GiB by default) long
before 30 days under load, and an entry left unread that long is cheaper kept in IA and read back
($0.01/GB) than relayed again ($0.06/GB and more).
"none" turns a transition off.

S3 (large-file contents `objects/`, coded blocks `blocks/` and segments of packed small files
`segments/`, docs/SEGMENTS.md): Intelligent-Tiering, entered by a
lifecycle transition on day 0 (clients keep writing Standard). It moves an object unread for 30
days to its Infrequent tier ($0.0125) and after 90 to Archive Instant Access ($0.004), with no
retrieval fee and no minimum duration, for $0.0025 per 1,000 monitored objects a month. Objects
under 128 KiB are never monitored nor tiered, so the rule skips them (no transition request,
$0.01 per 1,000, for nothing). The smallest large file (2 MiB) saves $0.0000205 a month once cold
against $0.0000025 of monitoring. Age-based lifecycle rules (Standard-IA at 30 days, Glacier
Instant Retrieval at 90) charge every read of an old file ($0.01 and $0.03/GB), bill at least 30
and 90 days and 128 KiB per object, and move hot old files too; they are kept as the
`hycloud:s3Tiering` = "lifecycle" choice for a deployment that knows its files go cold by age.
Segments hold files already unread for 30 days, yet they take Intelligent-Tiering too rather than
Glacier Instant Retrieval from day 0: the cleaner deletes segments early (GIR would bill the rest
of 90 days), reads of a packed file leave it packed (GIR charges $0.03/GB and $0.01 per 1,000
GETs, 25 times Standard's, for a file that turns hot again), and a 4 MiB segment's monitoring is
$0.0006/GB-month (docs/SEGMENTS.md counts it).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_efs as efs
from aws_cdk import aws_s3 as s3
from constructs import Construct

EFS_IA = "hycloud:efsTransitionToIA"
EFS_ARCHIVE = "hycloud:efsTransitionToArchive"
S3_TIERING = "hycloud:s3Tiering"
DEFAULTS = {EFS_IA: "AFTER_30_DAYS", EFS_ARCHIVE: "AFTER_180_DAYS", S3_TIERING: "intelligent-tiering"}
S3_CHOICES = ("intelligent-tiering", "lifecycle", "none")
# content.object_key, codec.layout.BLOCK_PREFIX, fs.segments_format.PREFIX (packed small files)
TIERED_PREFIXES = ("objects/", "blocks/", "segments/")
MIN_TIERED_BYTES = 128 * 1024  # Intelligent-Tiering leaves smaller objects in its frequent tier


def _context(scope: Construct, key: str) -> str:
    value = scope.node.try_get_context(key)
    return str(DEFAULTS[key] if value is None else value)


def _efs_policy(scope: Construct, key: str) -> efs.LifecyclePolicy | None:
    name = _context(scope, key)
    if name.lower() == "none":
        return None
    if not hasattr(efs.LifecyclePolicy, name):
        raise ValueError(f"{key}={name!r}: expected none or one of AFTER_1_DAY .. AFTER_365_DAYS")
    return getattr(efs.LifecyclePolicy, name)


def _days(policy: efs.LifecyclePolicy) -> int:
    return int(policy.value.split("_")[1])  # AFTER_<n>_DAY(S)


def efs_lifecycle(scope: Construct) -> dict[str, Any]:
    """efs.FileSystem properties of the lifecycle policy the context asks for (see the docstring).

    EFS refuses an Archive transition no later than the IA one (PutLifecycleConfiguration), so
    that is refused here, at synth, rather than by CloudFormation half-way through a deployment.
    Archive also needs Elastic throughput, which every file system of the app uses (efs_volume.py).
    """
    to_ia = _efs_policy(scope, EFS_IA)
    to_archive = _efs_policy(scope, EFS_ARCHIVE)
    if to_ia and to_archive and _days(to_archive) <= _days(to_ia):
        raise ValueError(f"{EFS_ARCHIVE}={to_archive.value} must be later than {EFS_IA}={to_ia.value}")
    props: dict[str, Any] = {}
    if to_ia or to_archive:
        props["out_of_infrequent_access_policy"] = efs.OutOfInfrequentAccessPolicy.AFTER_1_ACCESS
    if to_ia:
        props["lifecycle_policy"] = to_ia
    if to_archive:
        props["transition_to_archive_policy"] = to_archive
    return props


def s3_tiering_rules(scope: Construct) -> list[s3.LifecycleRule]:
    """Lifecycle rules moving large-file contents and coded blocks to the tier the context chooses."""
    choice = _context(scope, S3_TIERING)
    if choice not in S3_CHOICES:
        raise ValueError(f"{S3_TIERING}={choice!r}: expected one of {', '.join(S3_CHOICES)}")
    if choice == "none":
        return []
    if choice == "intelligent-tiering":
        transitions = [
            s3.Transition(
                storage_class=s3.StorageClass.INTELLIGENT_TIERING, transition_after=Duration.days(0)
            )
        ]
    else:
        transitions = [
            s3.Transition(
                storage_class=s3.StorageClass.INFREQUENT_ACCESS, transition_after=Duration.days(30)
            ),
            s3.Transition(
                storage_class=s3.StorageClass.GLACIER_INSTANT_RETRIEVAL, transition_after=Duration.days(90)
            ),
        ]
    return [
        s3.LifecycleRule(
            id=f"tier-{prefix.rstrip('/')}",
            prefix=prefix,
            object_size_greater_than=MIN_TIERED_BYTES - 1,
            transitions=transitions,
        )
        for prefix in TIERED_PREFIXES
    ]
