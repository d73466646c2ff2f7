"""Upkeep, run on a schedule: relay-cache eviction, content reclamation, record repair, staging.

Cache files read within the last few minutes belong to a transfer in progress and are never
evicted (hycloud_core.fs.relay_cache). The collector reclaims content no link names
(hycloud_core.store.collector) once versions past their retention are dropped
(hycloud_core.fs.version_upkeep) and trash items past theirs are purged (hycloud_core.fs.trash);
the reconciler makes file records agree with EFS and removes
stale temporary files (hycloud_core.fs.reconcile); usage counters behind quotas are recounted
from the records; what deleted users left goes (hycloud_core.fs.user_purge).

Every run first settles in S3 any delta upload's version still kept only on EFS long after its
acknowledgement (hycloud_core.fs.settle; {"settle_late_s": s} overrides how long).
An event may pass {"budget": bytes} to override the cache budget, {"grace_s": s} to override
the grace period (only an administrator who knows no operation is in flight may lower it),
{"version_retention_s": s} to drop kept versions older than s now (a shorter retention),
{"trash_retention_s": s} to purge every user's trash items older than s now ({"trash": {"users",
"retention_s", "collect"}} runs that purge alone, for some users, and then a collection round), and
{"reconcile": {"users"}} runs the reconcile round (records and Merkle nodes against EFS) for those
users alone, {"walk": false} to run only the cheap rounds (eviction, staging): the 5-minute schedule does, the
hourly one runs everything.

The hourly walk also packs cold small files into S3 segments and cleans them (docs/SEGMENTS.md,
hycloud_core.fs.segments) when the deployment sets `hycloud:segmentAfterDays`. An event's
{"segments": {...}} runs that round alone, whatever "walk" says, with its own settings:
"users" (internal ids; default all), "pack_after_s" (how long unused), "min_live_share",
"segment_bytes", "min_file_bytes"/"max_file_bytes" (which files pay for packing), "grace_s" (before
a retired segment is deleted), "pack"/"clean" (true/false).

Every run also migrates a bounded page of file records keyed by path (deployments before the
directory index) to records keyed by folder id, from its cursor (hycloud_core.store.migrate_records);
an event's {"migrate": {"limit", "budget_s", "users"}} sets its bounds and users.

The hourly walk also moves files that crossed the small-file threshold between EFS and S3, a
bounded number per pass (hycloud_core.fs.threshold_moves). An event's {"moves": {...}} runs that
round alone: "users", "threshold" (default the deployment's), "max_files", "max_bytes",
"settle_s" (files changed more recently stay).

Before the moves, the hourly walk chooses the small-file threshold by cost from the measured mix,
for the deployment and for users whose own mix pays for one, and stores it with its reasons
(hycloud_core.cost.thresholds); the moves then use each user's threshold in force. Nothing is
chosen when the operator fixed the threshold (`hycloud:smallFileThresholdFixed`). An event's
{"thresholds": {...}} runs that round alone (then its moves, unless it says "moves": false):
"users" (internal ids; naming users leaves the deployment's choice as it is unless
"deployment": true), "min_files", "min_days", "switch_share", "payback_months" (the guard rails of
hycloud_core.cost.threshold_choice).
"""

from __future__ import annotations

import os
import time

import boto3

from hycloud_core.config import InstanceConfig
from hycloud_core.cost import load_prices, thresholds
from hycloud_core.cost.threshold_choice import Guard
from hycloud_core.fs import Namespace, segments, threshold_moves
from hycloud_core.fs.reconcile import Reconciled, reconcile_all, reconcile_user
from hycloud_core.fs.relay_cache import RelayCache
from hycloud_core.fs.settle import LATE_S, settle_late
from hycloud_core.fs.snapshots import abandon_stale
from hycloud_core.fs.trash import purge_trash
from hycloud_core.fs.user_purge import purge_deleted_users
from hycloud_core.fs.version_upkeep import purge_expired_versions
from hycloud_core.observability import logger, observed
from hycloud_core.store.collector import Collector
from hycloud_core.store.migrate_records import upkeep_round
from hycloud_core.store.objects import Objects
from hycloud_core.store.quotas import Quota
from hycloud_core.store.records import Records

CONFIG = InstanceConfig()
STAGING_MAX_AGE_S = 86400


def _clean_staging(now: float) -> int:
    removed = 0
    if not os.path.isdir(CONFIG.staging_dir):
        return 0
    with os.scandir(CONFIG.staging_dir) as it:
        for entry in it:
            if entry.is_file() and now - entry.stat().st_mtime > STAGING_MAX_AGE_S:
                os.unlink(entry.path)
                removed += 1
    return removed


def _recount_usage(records: Records) -> int:
    """Rebuild each user's usage counter from its records (quotas drift after a crash)."""
    root = CONFIG.namespaces_dir
    users = (
        [u for u in sorted(os.listdir(root)) if os.path.isdir(os.path.join(root, u))]
        if os.path.isdir(root)
        else []
    )
    for user in users:
        Quota(records, user).recount()
    return len(users)


def _segments(grace_s: int, options: dict | None) -> dict:
    """Pack and clean segments: the deployment's settings, or an event's (`options`)."""
    settings = segments.Settings.from_env(grace_s, options)
    if options is None and settings.pack_after_s is None:
        return {}  # not configured: nothing packed, so nothing to clean
    o = options or {}
    users = o.get("users")
    done = segments.run(
        Records(CONFIG.table).table,
        boto3.client("s3"),
        CONFIG.bucket,
        CONFIG.namespaces_dir,
        settings,
        users=None if users is None else [str(u) for u in users],
        pack=bool(o.get("pack", True)),
        clean=bool(o.get("clean", True)),
    )
    return {"segments": done.to_dict()}


def _namespaces() -> list[str]:
    root = CONFIG.namespaces_dir
    if not os.path.isdir(root):
        return []
    return [u for u in sorted(os.listdir(root)) if os.path.isdir(os.path.join(root, u))]


def _thresholds(options: dict | None) -> tuple[dict, thresholds.Chosen | None]:
    """The threshold chosen by cost (all users, or an event's), stored; None when it is fixed."""
    if CONFIG.small_file_threshold_fixed:
        return {"thresholds": {"fixed": CONFIG.small_file_threshold}}, None
    o = options or {}
    users = o.get("users")
    chosen = thresholds.choose_all(
        Records(CONFIG.table),
        _namespaces() if users is None else [str(u) for u in users],
        load_prices(),
        CONFIG.small_file_threshold,
        Guard.from_event(o),
        deployment=bool(o.get("deployment", users is None)),
    )
    return {"thresholds": chosen.report}, chosen


def _thresholds_and_moves(options: dict | None) -> dict:
    """The threshold's round, then the moves across each user's threshold in force (an event's
    round moves its "users" with its "settle_s", unless it says "moves": false)."""
    chose, chosen = _thresholds(options)
    o = options or {}
    if o.get("moves", True) is False:
        return chose
    return chose | _moves({k: o[k] for k in ("users", "settle_s") if k in o}, chosen)


class _InForce:
    """Each user's threshold in force as stored (a moves event chooses nothing)."""

    def __init__(self) -> None:
        self.stored = thresholds.Thresholds(Records(CONFIG.table).table)

    def threshold_of(self, user: str) -> int:
        fixed = CONFIG.small_file_threshold_fixed
        return self.stored.in_force(user, CONFIG.small_file_threshold, fixed).threshold


def _moves(options: dict | None, chosen: thresholds.Chosen | _InForce | None = None) -> dict:
    """Files across the threshold moved: each user's threshold in force (`chosen`), the
    deployment's configured one, or an event's (`options`, whose "threshold" wins for all)."""
    o = options or {}
    settings = threshold_moves.MoveSettings.from_event(CONFIG.small_file_threshold, o)
    records = Records(CONFIG.table)
    users = o.get("users")
    done = threshold_moves.run(
        records,
        Objects(records.table, boto3.client("s3"), CONFIG.bucket),
        CONFIG.namespaces_dir,
        settings,
        users=None if users is None else [str(u) for u in users],
        threshold_of=None if chosen is None or "threshold" in o else chosen.threshold_of,
    )
    return {"moves": done.to_dict()}


def _trash(grace_s: int, options: dict) -> dict:
    """The trash round alone (an event's {"trash": {...}}): purge the items of "users" (internal
    ids; default all) older than "retention_s" (default: each user's own, else the deployment's),
    then, with "collect": true, one collection round (deployment-wide, as every round is)."""
    records, users, retention = Records(CONFIG.table), options.get("users"), options.get("retention_s")
    purged = purge_trash(
        records.table,
        CONFIG.namespaces_dir,
        CONFIG.trash_retention_s,
        retention_s=None if retention is None else max(0, int(retention)),
        users=None if users is None else [str(u) for u in users],
    )
    done: dict = {"trash_purged": purged.to_dict()}
    if options.get("collect"):
        objects = Objects(records.table, boto3.client("s3"), CONFIG.bucket)
        done["collected"] = Collector(records.table, objects, CONFIG.namespaces_dir, grace_s).run().to_dict()
    return done


def _walk(grace_s: int, retention_s: int | None, trash_s: int | None = None) -> dict:
    """The rounds that read every namespace: too costly for every 5 minutes on a large deployment."""
    records = Records(CONFIG.table)
    s3 = boto3.client("s3")
    purged = purge_deleted_users(records.table, s3, CONFIG.bucket, CONFIG.namespaces_dir, grace_s)
    reconciled = reconcile_all(records, CONFIG.namespaces_dir, grace_s)
    recounted = _recount_usage(records)
    objects = Objects(records.table, s3, CONFIG.bucket)
    trash = purge_trash(records.table, CONFIG.namespaces_dir, CONFIG.trash_retention_s, retention_s=trash_s)
    stale_snapshots = abandon_stale(records.table, CONFIG.namespaces_dir)
    versions = purge_expired_versions(  # before the mark: what only dropped versions named goes now
        objects, CONFIG.namespaces_dir, grace_s, retention_s=retention_s
    )
    collected = Collector(records.table, objects, CONFIG.namespaces_dir, grace_s).run()
    return {
        "collected": collected.to_dict(),
        "records_written": reconciled.records_written,
        "records_removed": reconciled.records_removed,
        "temporary_removed": reconciled.temporary_removed,
        "merkle_repaired": reconciled.merkle_repaired,
        "merkle_rebuilt": reconciled.merkle_rebuilt,
        "usage_recounted": recounted,
        "users_purged": purged,
        "versions_purged": versions.to_dict(),
        "trash_purged": trash.to_dict(),
        "snapshots_abandoned": stale_snapshots,
    }


def _reconcile(grace_s: int, spec: dict) -> dict:
    """The walk's reconcile round (records and Merkle nodes against EFS, migrating a tree keyed
    by path) for some users only, without the rest of the walk."""
    records, total = Records(CONFIG.table), Reconciled()
    for user in [str(u) for u in spec.get("users", [])]:
        total.merge(reconcile_user(records, Namespace(CONFIG.namespaces_dir, user), user, grace_s))
    return {
        "records_written": total.records_written,
        "records_removed": total.records_removed,
        "merkle_repaired": total.merkle_repaired,
        "merkle_rebuilt": total.merkle_rebuilt,
    }


def _objects() -> Objects:
    """The content records, made only when needed (a data instance's upkeep has no table)."""
    return Objects(Records(CONFIG.table).table, boto3.client("s3"), CONFIG.bucket)


@observed
def handler(event: dict, context: object) -> dict:
    event = event if isinstance(event, dict) else {}
    budget = int(event.get("budget", CONFIG.relay_cache_bytes))
    grace_s = max(0, int(event.get("grace_s", CONFIG.gc_grace_s)))
    cache = RelayCache(CONFIG.cache_dir)
    # delta uploads' versions still only on EFS long after they were kept, put in S3
    settled = settle_late(cache, _objects, time.time(), float(event.get("settle_late_s", LATE_S)))
    evicted = cache.evict(budget)
    result = {
        "settled": settled,
        "evicted": evicted,
        "remaining_bytes": sum(e.size for e in cache.entries()),
        "budget": budget,
        "staging_removed": _clean_staging(time.time()),
    }
    migrating = event.get("migrate") if isinstance(event.get("migrate"), dict) else None
    result |= upkeep_round(CONFIG.table, CONFIG.namespaces_dir, migrating)  # bounded, resumable
    if event.get("walk", True):
        retention, trash_s = event.get("version_retention_s"), event.get("trash_retention_s")
        result |= _walk(
            grace_s,
            None if retention is None else max(0, int(retention)),
            None if trash_s is None else max(0, int(trash_s)),
        )
        if "moves" not in event and "thresholds" not in event:
            result |= _thresholds_and_moves(None)  # before packing: a file moved into EFS may be packed later
        if "segments" not in event:
            result |= _segments(grace_s, None)
    if isinstance(event.get("thresholds"), dict):
        result |= _thresholds_and_moves(event["thresholds"])
    if isinstance(event.get("moves"), dict):
        result |= _moves(event["moves"], _InForce())
    if isinstance(event.get("segments"), dict):
        result |= _segments(grace_s, event["segments"])
    if isinstance(event.get("trash"), dict):
        result |= _trash(grace_s, event["trash"])
    if isinstance(event.get("reconcile"), dict):
        result |= _reconcile(grace_s, event["reconcile"])
    logger.info(
        "upkeep",
        extra={
            k: v if isinstance(v, int) else len(v)
            for k, v in result.items()
            if k not in ("collected", "versions_purged", "trash_purged", "segments", "thresholds")
        },
    )
    return result
