"""Jobs over the coded blocks of every instance, a slice at a time (docs/GEO.md).

- Repair `{"region", "user"?}`: check every coded block on that instance and rebuild the missing
  or damaged ones from the others; one user's files, or every user's without "user".
- Migrate `{"action": "migrate", "instances": [...]}`: put these data instances (the shape of
  `HYCLOUD_INSTANCES`; the home is always on the ring) on the ring, move the blocks the new ring
  moves (phase "move"), then delete the old copies (phase "clean").
- Sweep `{"action": "sweep", "grace_s"?}`: reclaim blocks no link file names (hourly).

Each event is a spec of hycloud_core/jobs/specs.py (`RepairStep`, `MigrateStep`, `SweepSpec`); one
that is not fails the job naming the key. A step answers with its spec carried forward (the
counts so far) and "state": "running" makes the workflow run the next slice from "cursor"; "succeeded" or "failed" (with "error") end it. The step runs in the
home region and reaches every instance's bucket.
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from functools import cache

from hycloud_core import reach
from hycloud_core.codec.layout import CodedLayout
from hycloud_core.coded.migration import coded_links, drop_moved_copies, migrate_link
from hycloud_core.coded.repair import RepairCount, repair_file
from hycloud_core.coded.sweep import sweep_blocks
from hycloud_core.config import InstanceConfig
from hycloud_core.cost.block_transfer import record_crossed
from hycloud_core.fs import Namespace
from hycloud_core.fs.blocks import BlockStore
from hycloud_core.instances import Instance, described, from_environment, on_ring, reachable
from hycloud_core.jobs.specs import MigrateStep, RepairStep, SpecError, SweepSpec, coded_block_spec
from hycloud_core.observability import logger, observed
from hycloud_core.store import ring
from hycloud_core.store.records import Records

CONFIG = InstanceConfig()
SLICE_S = 20.0  # a step's time: it stops after the file it is on, and always does one
MIN_RING = 3


@cache
def _s3(region: str):
    return reach.client("s3", region)


def _home() -> str:
    return from_environment()[0].region


@cache
def _table():
    return Records(CONFIG.table).table


def sweep(spec: SweepSpec) -> dict:
    """Reclaim blocks no link names, in every bucket (hourly, and on demand)."""
    grace = CONFIG.gc_grace_s if spec.grace_s is None else spec.grace_s
    result = sweep_blocks(BlockStore(reachable(_table()), _s3), CONFIG.namespaces_dir, grace, table=_table())
    logger.info("block sweep", extra={"listed": result.listed, "deleted": sum(result.deleted.values())})
    return {"state": "succeeded", **asdict(result)}


def repair(spec: RepairStep) -> dict:
    """Check and rebuild the blocks on one instance, of one user's coded files or everyone's."""
    store = BlockStore(on_ring(_table()), _s3, _home())
    if spec.region not in store.buckets:
        return {**spec.to_event(), "state": "failed", "error": f"no instance in {spec.region}"}
    count = RepairCount(spec.checked, spec.rebuilt, spec.unrecoverable)
    files, cursor = spec.files, spec.cursor
    todo, deadline = coded_links(CONFIG.namespaces_dir, spec.user), time.monotonic() + SLICE_S
    while cursor < len(todo) and (cursor == spec.cursor or time.monotonic() < deadline):
        owner, path = todo[cursor]
        cursor += 1
        link = Namespace(CONFIG.namespaces_dir, owner).current_link(path)
        if link is None or not link.erasure:
            continue
        files += 1
        count.add(repair_file(CodedLayout.from_dict(link.erasure), spec.region, store))
    record_crossed(_table(), store.crossed)
    logger.info("repair step", extra={"region": spec.region, "cursor": cursor, "rebuilt": count.rebuilt})
    step = replace(spec, cursor=cursor, files=files, **asdict(count))
    return {**step.to_event(), "state": "running" if cursor < len(todo) else "succeeded"}


def _start_migration(spec: MigrateStep) -> MigrateStep | str:
    """Check the new ring and record it: the first step, or an error message when it cannot be used."""
    try:
        listed = [{k: str(v) for k, v in item.items()} for item in spec.instances]
        new = described(listed)
    except (KeyError, TypeError, AttributeError):
        return "instances: a list of {region, bucket, ...} objects"
    regions = [from_environment()[0].region, *(item.region for item in new)]
    if len(set(regions)) != len(regions) or len(regions) < MIN_RING:
        return f"a ring needs {MIN_RING} or more distinct regions, home included: {regions}"
    for item in new:
        try:
            _s3(item.region).head_bucket(Bucket=item.bucket)
        except Exception:  # noqa: BLE001 - any failure means the instance cannot take blocks
            return f"the bucket {item.bucket} of {item.region} cannot be reached"
    previous = tuple(i.to_dict() for i in on_ring(_table())[1:])  # their old copies go too
    ring.save(_table(), listed)
    return replace(spec, started=time.time(), phase="move", previous=previous)


def _distinct(instances: list[Instance]) -> list[Instance]:
    """One per region, the first named kept."""
    return list({i.region: i for i in reversed(instances)}.values())


def migrate(spec: MigrateStep) -> dict:
    """Move the blocks the new ring moves, file by file; then drop the old copies."""
    if spec.started is None:
        started = _start_migration(spec)
        if isinstance(started, str):
            return {**spec.to_event(), "state": "failed", "error": started}
        spec = started
    table = _table()
    previous = [Instance(**item) for item in spec.previous]
    store = BlockStore(_distinct([*reachable(table), *previous]), _s3, _home())
    regions = [i.region for i in on_ring(table)]
    if spec.phase == "clean":
        deleted = drop_moved_copies(store, CONFIG.namespaces_dir, float(spec.started or 0))
        return {**spec.to_event(), "deleted": deleted, "state": "succeeded"}
    cursor, deadline = spec.cursor, time.monotonic() + SLICE_S
    todo = coded_links(CONFIG.namespaces_dir)
    counts = {"files": spec.files, "moved": spec.moved, "kept": spec.kept, "unmovable": spec.unmovable}
    while cursor < len(todo) and (cursor == spec.cursor or time.monotonic() < deadline):
        try:
            result = migrate_link(CONFIG.namespaces_dir, table, *todo[cursor], regions, store)
        except RuntimeError:  # fewer than k good blocks of a chunk: the file keeps its layout
            logger.exception("file not migrated", extra={"file": todo[cursor]})
            counts["unmovable"] += 1
            result = None
        cursor += 1
        if result is not None:
            counts["files"] += 1
            counts["moved"] += result.moved
            counts["kept"] += result.kept
    record_crossed(table, store.crossed)
    logger.info("migration step", extra={"cursor": cursor, **counts})
    phase = "move" if cursor < len(todo) else "clean"
    return {**replace(spec, cursor=cursor, phase=phase, **counts).to_event(), "state": "running"}


@observed
def handler(event: dict, context: object) -> dict:
    try:
        spec = coded_block_spec(event)
    except SpecError as err:
        return {**event, "state": "failed", "error": str(err)}
    if isinstance(spec, SweepSpec):
        return sweep(spec)
    if isinstance(spec, MigrateStep):
        return migrate(spec)
    return repair(spec)
