"""One sync between a local folder and a cloud folder: scan, exchange, plan, then transfer."""

from __future__ import annotations

import random
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
from .journal import Journal, journal_key, journal_path
from .journal import load as load_journal
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
    rescan: bool = False  # list every folder again, trusting no scan journal (journal.py)


def _ignore(_what: str, _rel: str) -> None:
    pass


# passes a sync makes while other devices change the files it pushes: four devices syncing one
# file at once met a new version at each of 3; a pause of RACE_PAUSE x the pass number x 0.5-1.5
# before each pass again keeps devices that race once from meeting again (at most 4.5 s in all)
RACE_PASSES, RACE_PAUSE = 6, 0.2


@dataclass
class _Pass:
    plan: Plan
    diff: Differences
    local: LocalTree
    sizes: dict[str, dict]
    outcome: Outcome
    phases: dict[str, float] = field(default_factory=dict)  # listing and transfer seconds


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
    the report the CLI prints. A push that met a version another device wrote since the exchange
    changed nothing (`executor.py`): the sync exchanges again and plans it as a conflict, the
    newer by mtime staying at the path, the other kept beside it."""
    started, options = time.perf_counter(), options or SyncOptions()
    remote_root, progress = paths.normalize(remote_root), progress or SyncProgress()
    if direction == "push" and not local_root.is_dir():
        raise HyCloudError(f"{local_root} is not a directory", code="no-such-local-file", status=400)
    keep = PathFilter.of(options.exclude, options.include)
    state = SyncState(pair_id(client.http.base, client.store.user, remote_root, local_root))
    try:
        resumed, passes = state.interrupted(), []
        for n in range(RACE_PASSES):
            if n:
                time.sleep(RACE_PAUSE * n * random.uniform(0.5, 1.5))
            passes.append(
                _one_pass(client, local_root, remote_root, direction, options, progress, on_done, state, keep)
            )
            if options.dry_run or not passes[-1].outcome.raced:
                break
        return _report(passes, progress, options, resumed, started)
    finally:
        progress.close()
        state.close()


def _one_pass(
    client: HyCloud,
    local_root: Path,
    remote_root: str,
    direction: Direction,
    options: SyncOptions,
    progress: SyncProgress,
    on_done,
    state: SyncState,
    keep: PathFilter,
) -> _Pass:
    """Scan, exchange, plan and (unless a dry run) transfer once."""
    scanned = time.perf_counter()
    local = scan(
        local_root, state, keep, options.checksum, _journal(state, remote_root, options), remote_root
    )
    local.seconds = time.perf_counter() - scanned
    diff = find(client.merkle_children, remote_root, local, keep, _sender(client))
    if direction == "push":  # a pushed tree never writes plaintext into an encrypted folder below
        from ..encrypted.guard import refuse_tree

        refuse_tree(remote_root, diff.files, local.files, "hycloud sync")
    if direction == "pull" and "" in diff.local_dirs:
        raise NotFoundError(f"{remote_root} is not a folder in the cloud", code="not-found")
    base = state.base(diff.files if options.dry_run else None)  # a real run agrees on every file
    plan = make_plan(
        direction, remote_root, diff, local, base, state.has_history(), options.delete, options.device
    )
    ctx = Context(client, remote_root, local_root, local, diff, state, base, progress, on_done)
    listed = time.perf_counter()
    sizes = transfer_sizes(ctx, plan, options.dry_run)
    phases, outcome = {"list_s": time.perf_counter() - listed}, Outcome()
    if not options.dry_run:
        state.begin(client.http.base, remote_root, local_root)
        if direction == "pull":
            local_root.mkdir(parents=True, exist_ok=True)
        progress.start(len(sizes), sum(e["size"] or 0 for e in sizes.values()))
        outcome = execute(ctx, plan, sizes)
        _agree(state, remote_root, local, diff, base)
        state.finish()
        phases["transfer_s"] = time.perf_counter() - listed - phases["list_s"]
    return _Pass(plan, diff, local, sizes, outcome, phases)


def _journal(state: SyncState, remote_root: str, options: SyncOptions) -> Journal:
    """The pair's scan journal; an empty one (every folder listed) with --rescan or --checksum."""
    key = journal_key(remote_root, tuple(options.exclude), tuple(options.include))
    path = journal_path(state.path, state.pair)
    return Journal(path, key) if options.rescan or options.checksum else load_journal(path, key)


def _sender(client: HyCloud):
    """The one-round exchange through `client`, when it has it (an SDK, not every test double)."""
    return getattr(client, "merkle_diff", None)


def _agree(
    state: SyncState, root: str, local: LocalTree, diff: Differences, base: dict[str, BaseEntry]
) -> None:
    """Files the exchange found equal on both sides are the new base; files gone from both leave it."""
    changes: dict[str, BaseEntry | None] = {}
    for rel, f in local.files.items():
        if rel in diff.files:
            continue
        merkle = f.merkle.hex() if f.merkle else merkle_of(f.content_hash)
        if rel not in base or base[rel].merkle != merkle:
            changes[rel] = BaseEntry(merkle, f.content_hash, f.mtime)
    changes.update({rel: None for rel in base if rel not in local.files and rel not in diff.files})
    state.record_many(changes)


def _timings(passes: list[_Pass]) -> dict:
    """Where the time went: the local scan, the exchange (requests and comparing), listing the
    cloud's entries of what is sent, and the transfers (with the state they record)."""
    return {
        "scan_s": round(sum(p.local.seconds for p in passes), 4),
        "exchange_s": round(sum(p.diff.exchange_seconds for p in passes), 4),
        "list_s": round(sum(p.phases.get("list_s", 0.0) for p in passes), 4),
        "transfer_s": round(sum(p.phases.get("transfer_s", 0.0) for p in passes), 4),
    }


def _report(
    passes: list[_Pass], progress: SyncProgress, options: SyncOptions, resumed: bool, started: float
) -> dict:
    """One report for every pass: what each did, in order; what still raced after the last is failed."""
    first, last = passes[0], passes[-1]
    sizes = first.sizes if options.dry_run else {}

    def every(field: str) -> list:
        return [x for p in passes for x in getattr(p.plan, field)]

    raced = [
        {"path": rel, "error": "changed in the cloud during the sync; run it again"}
        for rel in last.outcome.raced
    ]
    return {
        "direction": first.plan.direction,
        "dry_run": options.dry_run,
        "resumed": resumed,
        "rounds": sum(p.diff.rounds for p in passes),
        "requests": sum(p.diff.requests for p in passes),
        "hashed": sum(p.local.hashed for p in passes),
        "listed": sum(p.local.listed for p in passes),
        "timings": _timings(passes),
        "files": len(sizes) if options.dry_run else sum(len(p.outcome.transferred) for p in passes),
        "bytes": sum(e["size"] for e in sizes.values()) if options.dry_run else progress.bytes,
        "mkdir": every("mkdirs"),
        "copied": every("copies"),
        "moved": [{"from": a, "to": b} for a, b in every("moves")],
        "deleted": every("deletes"),
        "removed_dirs": every("rmdirs"),
        "conflicts": [
            {"path": c.rel, "winner": c.winner, "kept_as": c.loser_name} for c in every("conflicts")
        ],
        "kept": last.plan.kept,
        "not_deleted": last.plan.not_deleted,
        "clashes": last.plan.clashes,
        "failed": [f for p in passes for f in p.outcome.failed] + raced,
        "seconds": round(time.perf_counter() - started, 3),
    }
