"""One sync between a local folder and a cloud folder: scan, exchange, plan, then transfer."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hycloud_core import paths
from hycloud_core.errors import HyCloudError, NotFoundError

from ..sdk import HyCloud
from .conflicts import this_device
from .diff import Differences, find, merkle_of
from .executor import Context, Outcome, execute, transfer_sizes
from .filters import PathFilter
from .plan import Direction, Plan, make_plan
from .progress import SyncProgress
from .scan import LocalTree, scan
from .state import BaseEntry, SyncState, pair_id


@dataclass(frozen=True)
class SyncOptions:
    dry_run: bool = False
    delete: bool = False
    exclude: Sequence[str] = ()
    include: Sequence[str] = ()
    checksum: bool = False
    device: str = field(default_factory=this_device)


def _ignore(_what: str, _rel: str) -> None:
    pass


def sync(
    client: HyCloud,
    local_root: Path,
    remote_root: str,
    direction: Direction,
    options: SyncOptions | None = None,
    progress: SyncProgress | None = None,
    on_done=_ignore,
) -> dict:
    """Make the destination like the source (see `plan` for what is never overwritten); returns
    the report the CLI prints."""
    started, options = time.perf_counter(), options or SyncOptions()
    remote_root, progress = paths.normalize(remote_root), progress or SyncProgress()
    if direction == "push" and not local_root.is_dir():
        raise HyCloudError(f"{local_root} is not a directory", code="no-such-local-file", status=400)
    keep = PathFilter.of(options.exclude, options.include)
    state = SyncState(pair_id(client.http.base, client.store.user, remote_root, local_root))
    try:
        resumed = state.interrupted()
        local = scan(local_root, state, keep, options.checksum)
        diff = find(client.merkle_children, remote_root, local, keep)
        if direction == "pull" and "" in diff.local_dirs:
            raise NotFoundError(f"{remote_root} is not a folder in the cloud", code="not-found")
        base = state.base()
        plan = make_plan(
            direction, remote_root, diff, local, base, state.has_history(), options.delete, options.device
        )
        ctx = Context(client, remote_root, local_root, local, diff, state, base, progress, on_done)
        sizes = transfer_sizes(ctx, plan)
        outcome = Outcome()
        if not options.dry_run:
            state.begin(client.http.base, remote_root, local_root)
            if direction == "pull":
                local_root.mkdir(parents=True, exist_ok=True)
            progress.start(len(sizes), sum(e["size"] for e in sizes.values()))
            outcome = execute(ctx, plan, sizes)
            _agree(state, remote_root, local, diff, base)
            state.finish()
        return _report(plan, diff, local, outcome, sizes, progress, options, resumed, started)
    finally:
        progress.close()
        state.close()


def _agree(
    state: SyncState, root: str, local: LocalTree, diff: Differences, base: dict[str, BaseEntry]
) -> None:
    """Files the exchange found equal on both sides are the new base; files gone from both leave it."""
    changes: dict[str, BaseEntry | None] = {}
    for rel, f in local.files.items():
        if rel in diff.files:
            continue
        merkle = merkle_of(root, rel, f.content_hash)
        if rel not in base or base[rel].merkle != merkle:
            changes[rel] = BaseEntry(merkle, f.content_hash, f.mtime)
    changes.update({rel: None for rel in base if rel not in local.files and rel not in diff.files})
    state.record_many(changes)


def _report(
    plan: Plan,
    diff: Differences,
    local: LocalTree,
    outcome: Outcome,
    sizes: dict[str, dict],
    progress: SyncProgress,
    options: SyncOptions,
    resumed: bool,
    started: float,
) -> dict:
    return {
        "direction": plan.direction,
        "dry_run": options.dry_run,
        "resumed": resumed,
        "rounds": diff.rounds,
        "requests": diff.requests,
        "hashed": local.hashed,
        "files": len(sizes) if options.dry_run else len(outcome.transferred),
        "bytes": sum(e["size"] for e in sizes.values()) if options.dry_run else progress.bytes,
        "mkdir": plan.mkdirs,
        "copied": plan.copies,
        "moved": [{"from": a, "to": b} for a, b in plan.moves],
        "deleted": plan.deletes,
        "removed_dirs": plan.rmdirs,
        "conflicts": [{"path": c.rel, "winner": c.winner, "kept_as": c.loser_name} for c in plan.conflicts],
        "kept": plan.kept,
        "not_deleted": plan.not_deleted,
        "clashes": plan.clashes,
        "failed": outcome.failed,
        "seconds": round(time.perf_counter() - started, 3),
    }
