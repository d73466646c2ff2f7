"""Carries out a plan, recording each file's new agreed state as soon as it is done (the journal
a killed sync resumes from). Small files go through `sdk.bundles` in batches; large files
through `put`/`get`, which send a delta when eq. 2 says it pays.

Every push and delete in the cloud names the version the plan saw there (`preconditions.py`):
one that meets another version (written by another device since the exchange) changes nothing
and is reported as `raced`, for the next pass to plan as a conflict (`run.py`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from hycloud_core import content
from hycloud_core.errors import ConflictError, HyCloudError, NotFoundError

from .. import preconditions
from ..sdk import HyCloud, bundles
from .diff import Differences, full_path, merkle_of
from .plan import Conflict, Plan
from .progress import SyncProgress
from .scan import RACY_NS, LocalFile, LocalTree, remember_file
from .state import BaseEntry, SyncState

BATCH = 256  # files per put_files call (four bundles at once); a killed sync re-checks one batch
PULL_BATCH = 2048  # files per get_files call: ten bundles of 200 keep every connection busy
BUSY_TRIES, BUSY_PAUSE = 3, 1.0  # files refused as busy (a path lease held elsewhere) are sent again
Done = Callable[[str, str], None]


# what the cloud answers a transfer of a file another device changed or removed since the exchange
RACED = ("version-mismatch", "not-found")


@dataclass
class Outcome:
    transferred: list[str] = field(default_factory=list)
    failed: list[dict] = field(default_factory=list)
    raced: list[str] = field(default_factory=list)  # changed in the cloud since the exchange


@dataclass
class Context:
    client: HyCloud
    root: str
    local_root: Path
    local: LocalTree
    diff: Differences
    state: SyncState
    base: dict[str, BaseEntry]
    progress: SyncProgress
    on_done: Done
    outcome: Outcome = field(default_factory=Outcome)
    moved_aside: set[str] = field(default_factory=set)  # the destination's losing versions, kept

    def remote(self, rel: str) -> str:
        return full_path(self.root, rel)

    def path(self, rel: str) -> Path:
        return self.local_root / rel

    def failed(self, rel: str, error: Exception | str, code: str | None = None) -> None:
        if code in RACED:
            self.outcome.raced.append(rel)
        else:
            self.outcome.failed.append({"path": rel, "error": str(error)})

    def seen(self, rel: str) -> str | None:
        """The version the plan saw in the cloud at `rel`: what a push there may replace."""
        if rel not in self.diff.remote:
            return preconditions.ABSENT
        base = self.base.get(rel)
        return base.content_hash if base is not None and base.content_hash else None


def transfer_sizes(ctx: Context, plan: Plan, dry_run: bool = True) -> dict[str, dict]:
    """Each file to send or fetch with its size (and, for the cloud's files, the listing entry).
    A download does not list the cloud's folders first (a request per folder: most of a first
    sync's time): its bundles carry each file's size, mtime and mode; its size is None here."""
    rels = [*plan.copies, *(c.rel for c in plan.conflicts)]
    if plan.direction == "push":
        return {rel: {"size": ctx.local.files[rel].size} for rel in rels}
    if not dry_run:
        return {rel: {"size": None} for rel in rels}
    return remote_entries(ctx.client, ctx.root, rels)


def remote_entries(client: HyCloud, root: str, rels: Iterable[str]) -> dict[str, dict]:
    """Listing entries of the cloud's files, one directory listing per folder holding any."""
    folders: dict[str, set[str]] = {}
    for rel in rels:
        parent, _, name = rel.rpartition("/")
        folders.setdefault(parent, set()).add(name)

    def listing(parent: str) -> dict[str, dict]:
        wanted = folders[parent]
        try:
            entries = client.iter_dir(full_path(root, parent))
            return {_join(parent, e["name"]): e for e in entries if e["name"] in wanted}
        except NotFoundError:
            return {}

    out: dict[str, dict] = {}
    with ThreadPoolExecutor(8) as pool:
        for found in pool.map(listing, list(folders)):
            out.update(found)
    return out


def _join(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent else name


def execute(ctx: Context, plan: Plan, sizes: dict[str, dict]) -> Outcome:
    push = plan.direction == "push"
    for rel in _needed_dirs(plan) if push else plan.mkdirs:
        _guard(ctx, rel, partial(_make_dir, ctx, rel, push))
    pairs = _resolve_conflicts(ctx, plan, push)
    for old, new in plan.moves:
        if _guard(ctx, new, partial(_move, ctx, old, new, push)):
            ctx.on_done("moved", f"{old} -> {new}")
    pairs += [(rel, rel) for rel in plan.copies]
    (_push if push else _pull)(ctx, pairs, sizes)
    for c in plan.conflicts:
        _settle(ctx, c, push)
    for rel in plan.deletes:
        if _guard(ctx, rel, partial(_delete, ctx, rel, push)):
            ctx.state.record(rel, None)
            ctx.on_done("deleted", rel)
    for rel in plan.rmdirs:
        _remove_dir(ctx, rel, push)
    return ctx.outcome


def _make_dir(ctx: Context, rel: str, push: bool) -> None:
    if push:
        ctx.client.mkdir(ctx.remote(rel), parents=True)
    else:
        ctx.path(rel).mkdir(parents=True, exist_ok=True)


def _needed_dirs(plan: Plan) -> list[str]:
    """Folders to make in the cloud: uploads make their parents, so only those left empty."""
    filled: set[str] = set()
    for rel in [*plan.copies, *(c.rel for c in plan.conflicts)]:
        parts = rel.split("/")[:-1]
        filled.update("/".join(parts[:i]) for i in range(len(parts) + 1))
    return [rel for rel in plan.mkdirs if rel not in filled]


def _guard(ctx: Context, rel: str, step: Callable[[], object]) -> bool:
    try:
        step()
        return True
    except HyCloudError as e:
        ctx.failed(rel, e, e.code)
        return False
    except OSError as e:
        ctx.failed(rel, e)
        return False


def _resolve_conflicts(ctx: Context, plan: Plan, push: bool) -> list[tuple[str, str]]:
    """Set the losing version aside; returns (source rel, destination rel) pairs still to copy."""
    pairs = []
    for c in plan.conflicts:
        if c.winner == "destination":
            pairs.append((c.rel, c.loser_name))  # the source's version lands beside the winner
        elif _guard(ctx, c.rel, partial(_move, ctx, c.rel, c.loser_name, push, record=False)):
            pairs.append((c.rel, c.rel))
            ctx.moved_aside.add(c.rel)
    return pairs


def _settle(ctx: Context, c: Conflict, push: bool) -> None:
    """Make the source side of a settled conflict like the destination: the winner at the path,
    the loser beside it, on both sides and in the base. Else the loser's copy, only at the
    destination, would be reported at every later sync as gone from the source, and --delete
    would refuse it (changed there since the last sync). Nothing is lost when a step fails: each
    version is already kept somewhere before the next step moves anything."""
    sent = c.rel if c.winner == "source" else c.loser_name
    if sent not in ctx.outcome.transferred:
        return  # the conflict itself did not go through: the next sync plans it again
    step = {
        (True, "source"): _fetch_loser,
        (True, "destination"): _take_cloud_winner,
        (False, "source"): _send_loser,
        (False, "destination"): _send_local_winner,
    }[(push, c.winner)]
    if _guard(ctx, c.loser_name, lambda: step(ctx, c)):
        ctx.on_done("kept on both sides", c.loser_name)


def _fetch_loser(ctx: Context, c: Conflict) -> None:
    """Push, local won: the cloud's version, moved aside in the cloud, comes down beside it."""
    _download(ctx, c.loser_name, ctx.diff.remote[c.rel].mtime)


def _take_cloud_winner(ctx: Context, c: Conflict) -> None:
    """Push, the cloud's version won: the local one (already sent up beside it) moves aside
    locally too, and the cloud's comes down to the path."""
    loser, f = ctx.path(c.loser_name), ctx.local.files[c.rel]
    os.replace(ctx.path(c.rel), loser)
    ctx.state.record(c.loser_name, BaseEntry(merkle_of(f.content_hash), f.content_hash, f.mtime))
    _download(ctx, c.rel, ctx.diff.remote[c.rel].mtime)


def _send_loser(ctx: Context, c: Conflict) -> None:
    """Pull, the cloud's version won: the local one, moved aside locally, goes up beside it."""
    _upload(ctx, c.loser_name, ctx.local.files[c.rel])


def _send_local_winner(ctx: Context, c: Conflict) -> None:
    """Pull, the local version won: the cloud's version (already fetched beside it) moves aside in
    the cloud too, and the local one goes up to the path."""
    ctx.client.mv(ctx.remote(c.rel), ctx.remote(c.loser_name), expect=preconditions.ABSENT)
    digest = content.hash_file(ctx.path(c.loser_name))[0]
    f = remember_file(ctx.state, ctx.path(c.loser_name), digest)
    ctx.state.record(c.loser_name, BaseEntry(merkle_of(digest), digest, f.mtime))
    _upload(ctx, c.rel, ctx.local.files[c.rel])


def _download(ctx: Context, rel: str, mtime: float) -> None:
    """A cloud file down to the same name locally, with the mtime the exchange saw for it."""
    local = ctx.path(rel)
    local.parent.mkdir(parents=True, exist_ok=True)
    ctx.client.get(ctx.remote(rel), local)
    os.utime(local, (mtime, mtime))
    digest = content.hash_file(local)[0]
    f = remember_file(ctx.state, local, digest)
    ctx.state.record(rel, BaseEntry(merkle_of(digest), digest, f.mtime))


def _upload(ctx: Context, rel: str, f: LocalFile) -> None:
    """A local file sent to a name nothing in the cloud holds (a conflict's, or moved aside)."""
    ctx.client.put(
        ctx.path(rel), ctx.remote(rel), parents=True, mtime=f.mtime, mode=f.mode, expect=preconditions.ABSENT
    )
    ctx.state.record(rel, BaseEntry(merkle_of(f.content_hash), f.content_hash, f.mtime))


def _move(ctx: Context, old: str, new: str, push: bool, record: bool = True) -> None:
    """A rename, or a conflict's losing version set aside. In the cloud the destination must
    still be free: a move onto a file another device wrote there since the exchange would replace
    it (kept only as a version); refused, it is raced, and the next pass plans it again."""
    if push:
        ctx.client.mv(ctx.remote(old), ctx.remote(new), expect=preconditions.ABSENT)
    else:
        ctx.path(new).parent.mkdir(parents=True, exist_ok=True)
        os.replace(ctx.path(old), ctx.path(new))
    if record:
        before = ctx.base.get(old)
        ctx.state.record(old, None)
        if before is not None and before.content_hash:
            entry = BaseEntry(merkle_of(before.content_hash), before.content_hash, before.mtime)
            ctx.state.record(new, entry)


def _delete(ctx: Context, rel: str, push: bool) -> None:
    if push:
        ctx.client.rm(ctx.remote(rel), expect=ctx.seen(rel))
    else:
        ctx.path(rel).unlink(missing_ok=True)


def _remove_dir(ctx: Context, rel: str, push: bool) -> None:
    """A folder the source no longer has, removed only once empty."""
    try:
        if push:
            ctx.client.rmdir(ctx.remote(rel))
        else:
            ctx.path(rel).rmdir()
        ctx.on_done("removed", rel + "/")
    except (ConflictError, NotFoundError, OSError):
        pass


def _push(ctx: Context, pairs: list[tuple[str, str]], sizes: dict[str, dict]) -> None:
    threshold = ctx.client.small_file_threshold
    small = [p for p in pairs if sizes[p[0]]["size"] <= threshold]
    for batch in _batches(small):
        for attempt in range(BUSY_TRIES):
            expect = {ctx.remote(d): v for _, d in batch if (v := _expected(ctx, d)) is not None}
            results = bundles.put_files(
                ctx.client, [(ctx.path(s), ctx.remote(d)) for s, d in batch], ctx.progress, expect
            )
            busy = [p for p, r in zip(batch, results, strict=True) if r.get("code") == "busy"]
            for pair, result in zip(batch, results, strict=True):
                if pair not in busy or attempt == BUSY_TRIES - 1:
                    _pushed(ctx, pair[0], pair[1], result.get("error"), result.get("code"))
            if not busy:
                break
            batch = busy  # a path another operation held: once it is done, try again
            time.sleep(BUSY_PAUSE * (attempt + 1))
    for src, dst in (p for p in pairs if sizes[p[0]]["size"] > threshold):
        f = ctx.local.files[src]
        try:
            ctx.client.put(
                ctx.path(src),
                ctx.remote(dst),
                parents=True,
                progress=ctx.progress,
                mtime=f.mtime,
                mode=f.mode,
                expect=_expected(ctx, dst),
            )
            _pushed(ctx, src, dst, None)
        except HyCloudError as e:
            _pushed(ctx, src, dst, e, e.code)


def _expected(ctx: Context, dst: str) -> str | None:
    """What a push to `dst` may replace: the version seen there, or nothing when it is a new
    name (a conflict's copy) or the losing version was moved aside first."""
    return preconditions.ABSENT if dst in ctx.moved_aside else ctx.seen(dst)


def _pushed(ctx: Context, src: str, dst: str, error: object, code: str | None = None) -> None:
    if error:
        return ctx.failed(dst, str(error), code)
    f = ctx.local.files[src]
    ctx.state.record(src, BaseEntry(merkle_of(f.content_hash), f.content_hash, f.mtime))
    ctx.outcome.transferred.append(dst)
    ctx.progress.file_done()
    ctx.on_done("uploaded", dst)


def _pull(ctx: Context, pairs: list[tuple[str, str]], sizes: dict[str, dict]) -> None:
    """Every file through `bundles.get_files`, as `get -r` fetches a tree: small ones bundled,
    large ones alone, all requests in flight at once; each file written with its mtime and mode,
    its hash known from the bytes verified. A batch's files are recorded in one transaction."""
    listed = [p for p in pairs if p[0] in sizes]
    for src, _ in pairs:
        if src not in sizes:
            ctx.failed(src, "no longer in the cloud", "not-found")
    base = str(ctx.local_root.resolve()).rstrip("/") + "/"
    for batch in _batches(listed, PULL_BATCH):
        results = bundles.get_files(
            ctx.client, [(ctx.remote(s), ctx.path(d)) for s, d in batch], ctx.progress
        )
        records: dict[str, BaseEntry | None] = {}
        kept: list[tuple[str, int, int, str]] = []
        racy = time.time_ns() - RACY_NS
        for (src, dst), result in zip(batch, results, strict=True):
            try:
                entry = _pulled(ctx, src, dst, result)
            except OSError as e:
                ctx.failed(dst, e)
                continue
            if entry is not None:
                st, records[src] = entry
                if st.st_mtime_ns < racy:
                    kept.append((base + dst, st.st_size, st.st_mtime_ns, entry[1].content_hash or ""))
        ctx.state.save_hashes(kept)
        ctx.state.record_many(records)


def _pulled(ctx: Context, src: str, dst: str, result: dict) -> tuple[os.stat_result, BaseEntry] | None:
    """A fetched file's new agreed state (and its stat, for the kept hashes); None if it failed."""
    if result.get("status") != "ok":
        ctx.failed(dst, str(result.get("error")), result.get("code"))
        return None
    local = ctx.path(dst)
    digest = result.get("content_hash") or content.hash_file(local)[0]
    st = local.stat()
    ctx.outcome.transferred.append(dst)
    ctx.progress.file_done()
    ctx.on_done("downloaded", dst)
    return st, BaseEntry(ctx.diff.remote[src].merkle, digest, st.st_mtime)


def _batches(items: list, size: int = BATCH) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
