"""Snapshots: a read-only copy of a folder's tree as it was at `create`, browsable and restorable.

Where. `<efs root>/snapshots/<user>/<snapshot id>/...`, beside the namespaces (as the trash is),
so listings, stat, sync, the Merkle walk, the reconciler and the usage walk never see it, and no
path a client gives can reach it (every path is confined to the user's namespace). The
snapshot's folder holds the copied folder's contents: `/a.txt` in snapshot `s` is `<path>/a.txt`
as it was. One `SNAP#<user>` record per snapshot (store/snapshot_records.py) names it.

Cost of `create`: instant. It takes a lease on the folder (the snapshot's moment: writes below
have ended) and answers; the tree is copied after, folder by folder, by copy-on-write
(fs/snapshot_copy.py): a folder is copied before anything changes it, by the first to come, a
write below or the snapshot's job. A small tree is copied within the request (INLINE_S) and
answered ready; a larger one is answered "making" with the job (services/tree_ops.py) that ends
it. A file copied is a small file's bytes (at most the small-file threshold; a packed one's read
back from its segment, so the snapshot depends on no segment), a large file's link file only
(no data moves: its object is touched first, as `FileSystem.copy` does, see store/collector.py).
No file record nor Merkle node is written: the snapshot is read from EFS, its source of truth.
While one is being made, moving or removing the folder or what holds it waits for it; a second
snapshot of the folder (or above it) is refused busy. A restore writes file records and Merkle
nodes as well, about five times the work an entry: a tree past what one request restores is a
tree job's (`plan_restore`, `restore_page`, services/tree_ops.py); `restore` alone refuses more
than `RESTORE_MAX_ENTRIES` (413 `restore-too-large`).

What is kept. The collector marks every link file under the snapshot area (store/collector.py),
so a large file's object stays while any snapshot names it, whatever becomes of the original.
A link is copied without its retained history: a snapshot keeps the version it copied, not the
earlier ones the original still lists. A coded (erasure) file's blocks are kept the same way: the
block sweep (coded/sweep.py) marks the link files of the snapshot and trash areas too.

Read-only. Nothing writes into a snapshot but `create`; the API answers 403 to a write.
`restore` copies a snapshot (or one path in it) back into the namespace, to where it was or
`to`, and never overwrites: with `replace` what is there now goes to the trash first.

Quota. A snapshot's files and bytes are reported apart (as the trash's are). `create` refuses a
snapshot when the user's use plus all snapshots is at the quota already, and one that, once
copied, takes them over it is removed and its job fails `quota-exceeded`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from itertools import batched, groupby, islice
from typing import TYPE_CHECKING, Any

from .. import content, paths
from ..errors import ConflictError, NotFoundError, PayloadTooLargeError
from ..store.collector import snapshot_root
from ..store.locks import WAIT_S, Lease, snapshot_owner
from ..store.quotas import Change, Quota, QuotaExceeded
from ..store.snapshot_marks import CopyMarks
from ..store.snapshot_records import (
    MAKING,
    READY,
    Snapshot,
    SnapshotRecords,
    checked_name,
    default_name,
)
from ..store.time_ids import checked_id, new_id
from .namespace import Entry, Namespace
from .snapshot_copy import SnapshotCopy, Under
from .tree_walk import PRE, Step, count, under, walk

if TYPE_CHECKING:
    from .operations import FileSystem

# Entries one restore writes within API Gateway's 29 s, with room for a loaded machine
# (bench/results/snapshots.md: about 8 ms an entry to restore, at load 10 on 2 cores)
RESTORE_MAX_ENTRIES = 2_500  # a `restore`, which writes file records and Merkle nodes too
COUNT_S = 5.0  # at most this long counting before a restore starts
INLINE_S = 0.1  # `create` copies this long itself, and at most INLINE_ENTRIES; the rest is its job's
INLINE_ENTRIES = 200  # as many as a tree copy or removal runs inline (InstanceConfig.tree_inline_limit)
READ_TRIES = 5  # reads of a snapshot being made, each redone when its folder was copied meanwhile
LEASE_S = 900  # the lease of a snapshot being made on its folder, renewed by each job step
PAGE = 100  # entries of the walk copied together
REMOVING = ".removing-"


class SnapshotArea:
    """One user's snapshot folders on EFS (no records): what the collector walks."""

    def __init__(self, namespaces_dir: str, user: str) -> None:
        self.root = os.path.join(snapshot_root(namespaces_dir), user)

    def folder(self, snap_id: str) -> str:
        return os.path.join(self.root, checked_id(snap_id, "snapshot id is malformed", "bad-snapshot"))

    def ids(self) -> list[str]:
        """Every snapshot folder's id, oldest first (not one being removed)."""
        if not os.path.isdir(self.root):
            return []
        return sorted(n for n in os.listdir(self.root) if not n.startswith("."))

    def tree(self, snap_id: str) -> Namespace | None:
        """The snapshot's tree as a namespace (read through it, never written but by `create`);
        None when it has no folder."""
        return self.namespace(snap_id) if os.path.isdir(self.folder(snap_id)) else None

    def namespace(self, snap_id: str) -> Namespace:
        """The namespace rooted at the snapshot's folder, whether it exists or not."""
        return Namespace(self.root, os.path.basename(self.folder(snap_id)))  # the id checked

    def start(self, snap_id: str) -> None:
        """An empty folder for the snapshot (the standby's copy of one begins so, afresh)."""
        shutil.rmtree(self.folder(snap_id), ignore_errors=True)
        os.makedirs(self.folder(snap_id))

    def remove(self, snap_id: str) -> bool:
        """Claim the folder by one rename (a restore reading it then fails whole), then remove it."""
        aside = os.path.join(self.root, REMOVING + snap_id)
        try:
            os.rename(self.folder(snap_id), aside)
        except FileNotFoundError:
            return False
        shutil.rmtree(aside, ignore_errors=True)
        return True


def _copy_tree(
    steps: Iterator[Step], make_dir: Callable[[str], object], copy: Callable[[str], int]
) -> Change:
    """Copy a pre-order walk page by page (paths relative to the walk's root, "/" the root):
    folders made in order, each run of files copied side by side (EFS is latency-bound)."""
    from .operations import in_parallel  # the FileSystem's pool for per-file EFS work

    done = Change()
    for page in batched(steps, PAGE):
        for is_dir, group in groupby(page, key=lambda step: step.is_dir):
            rels = [under("/", step.rel) for step in group]
            if is_dir:
                for rel in rels:
                    make_dir(rel)
            else:
                done += Change(sum(in_parallel(copy, rels)), len(rels))
    return done


class Snapshots:
    """One user's snapshots, over the user's FileSystem (its namespace, records, quota, leases)."""

    def __init__(self, fs: FileSystem) -> None:
        self.fs = fs
        self.records = SnapshotRecords(fs.records.table, fs.user)
        self.area = SnapshotArea(os.path.dirname(fs.ns.root), fs.user)

    # --- making one ------------------------------------------------------------------------------
    def create(
        self, path: str, name: str | None = None, inline_s: float | None = None, inline: int = INLINE_ENTRIES
    ) -> Snapshot:
        """A snapshot of the folder `path` as it is now: ready when its copy took under
        `inline_s` and `inline` entries, else "making", for its job to go on with (it walks again from the start,
        past what is copied). 409 when `name` is taken (busy while one is made above), 403
        `quota-exceeded` when the user is over it."""
        snap = self.begin(path, name)
        try:
            budget = INLINE_S if inline_s is None else inline_s
            cursor, _ = self.copy(snap).walk_from(None, time.monotonic() + budget, inline, folders=1)
            if cursor is None:
                snap = self.finish(snap)
                self.drop_marks(snap, None)
        except BaseException:
            self.abandon(snap)
            raise
        return snap

    def begin(self, path: str, name: str | None = None) -> Snapshot:
        """Its record ("making"), its empty folder and its lease on `path`: its moment."""
        fs, now = self.fs, time.time()
        path = paths.normalize(path)
        name = checked_name(name) if name is not None else default_name(now)
        fs.ns.require_dir(path)
        self._check_quota(Change())
        snap = Snapshot(name, new_id(now), path, now, fs.user)
        self.records.claim(snap)
        try:
            self.area.start(snap.id)
            self.lease(snap).acquire(path, WAIT_S)
        except BaseException:
            self.abandon(snap)
            raise
        snap = replace(snap, at=time.time())
        self.records.put(snap)
        return snap

    def lease(self, snap: Snapshot) -> Lease:
        """The lease a snapshot being made holds on its folder (store/locks.py `snapshot_owner`)."""
        return _lease(self.fs.records.table, snap)

    def copy(self, snap: Snapshot) -> SnapshotCopy:
        return SnapshotCopy(self.fs, snap.id, snap.path)

    def making(self, name: str) -> Snapshot:
        """A snapshot still being made, its lease kept on; 409 `snapshot-interrupted` (and the
        snapshot removed) when the lease lapsed: a write may have passed uncopied."""
        snap = self.get(name)
        if snap.state != MAKING:
            raise ConflictError(f"snapshot {name} is {snap.state}", code="snapshot-not-making")
        try:
            self.lease(snap).renew()
        except ConflictError:
            self.abandon(snap)
            raise ConflictError(
                f"snapshot {name} was interrupted too long and is removed; make it again",
                code="snapshot-interrupted",
            ) from None
        return snap

    def finish(self, snap: Snapshot) -> Snapshot:
        """Ready: what its folders' copies hold summed, the quota checked, its lease let go."""
        held = Change()
        for mark in CopyMarks(self.fs.records.table, self.fs.user, snap.id).all():
            held += Change(int(mark.get("bytes", 0)), int(mark.get("files", 0)))
        try:
            self._check_quota(held)
        except QuotaExceeded:
            self.abandon(snap)
            raise
        ready = replace(snap, files=held.files, bytes=held.bytes, state=READY)
        self.records.put(ready)
        self.lease(snap).release()
        return ready

    def drop_marks(self, snap: Snapshot, deadline: float | None) -> bool:
        """The copy's marks of a ready snapshot, deleted until `deadline`; whether all went."""
        return CopyMarks(self.fs.records.table, self.fs.user, snap.id).drop(deadline)

    def abandon(self, snap: Snapshot) -> None:
        """A snapshot not made after all: its folder, marks, lease and record go."""
        _abandon(self.fs.records.table, self.area, snap)

    def _check_quota(self, more: Change) -> None:
        """The user's use plus every snapshot (and `more`) within the quota."""
        quota = Quota(self.fs.records, self.fs.user, self.fs.quota.defaults)
        report, held = quota.report(), self.records.totals()
        for what, adds in (("bytes", more.bytes), ("files", more.files)):
            limit, used = report[what]["limit"], report[what]["used"] + held[what]
            if limit is not None and used + adds > limit:
                raise QuotaExceeded(
                    f"quota exceeded: {used} of {limit} {what} in use with the snapshots, and this "
                    f"snapshot adds {adds}"
                )

    # --- reading ---------------------------------------------------------------------------------
    def listing(self) -> list[Snapshot]:
        """Every snapshot, newest first."""
        return sorted(self.records.all(), key=lambda s: s.at, reverse=True)

    def get(self, name: str) -> Snapshot:
        snap = self.records.get(checked_name(name))
        if snap is None:
            raise NotFoundError(f"no snapshot named {name}", code="snapshot-not-found")
        return snap

    def tree(self, name: str) -> tuple[Snapshot, Namespace]:
        """A ready snapshot and its tree; 409 while it is being made."""
        snap = self.get(name)
        tree = self.area.tree(snap.id)
        if snap.state != READY or tree is None:
            raise ConflictError(f"snapshot {name} is not complete", code="snapshot-not-ready")
        return snap, tree

    def read[T](self, name: str, path: str, how: Callable[[Namespace, str], T]) -> tuple[Snapshot, T]:
        """`how` over the namespace and path where the snapshot's `path` is now: its own folder
        once ready; while it is made, the live folder not yet copied that holds it, read at its
        path (it has not changed since the moment: a folder is copied before anything changes
        it) and trusted once it is still not copied after the read; else its copy."""
        for _ in range(READ_TRIES):
            snap = self.get(name)
            tree = self.area.tree(snap.id)
            if tree is None:
                raise ConflictError(f"snapshot {name} is being removed", code="snapshot-not-ready")
            if snap.state == READY:
                return snap, how(tree, path)
            copy = self.copy(snap)
            folder = copy.locate(path)
            if not folder:
                return snap, how(tree, path)
            with contextlib.suppress(NotFoundError):  # changed meanwhile: it was copied first
                found = how(self.fs.ns, Under(snap.path).path(path))
                if copy.unchanged(folder) and self.get(name).state == MAKING:
                    return snap, found
        raise ConflictError(f"snapshot {name} is being made; retry", code="busy")

    def stat(self, name: str, path: str) -> Entry:
        _snap, entry = self.read(name, path, lambda ns, at: ns.stat(at))
        return replace(entry, path=paths.normalize(path))

    def browse(
        self, name: str, path: str = "/", after: str | None = None, limit: int | None = None
    ) -> tuple[list[Entry], str | None]:
        _snap, (entries, cursor) = self.read(name, path, lambda ns, at: ns.listdir(at, after, limit))
        inside = Under(paths.normalize(path))
        return [replace(e, path=inside.path("/" + e.name)) for e in entries], cursor

    # --- restoring -------------------------------------------------------------------------------
    def restore(
        self, name: str, path: str = "/", to: str | None = None, replace: bool = False
    ) -> tuple[Entry, Snapshot]:
        """Copy `path` of the snapshot (all of it by default) back to where it was, or to `to`,
        within this request (at most RESTORE_MAX_ENTRIES: more is a job's, `plan_restore`).
        Nothing is overwritten: 409 when the place is taken, unless `replace`, which first moves
        what is there to the trash (one rename, restorable from there)."""
        plan = self.plan_restore(name, path, to, replace, RESTORE_MAX_ENTRIES)
        if plan.large:
            raise PayloadTooLargeError(
                f"{plan.src} holds more than {RESTORE_MAX_ENTRIES} files and folders, more than one "
                "request restores; restore its subfolders one by one",
                code="restore-too-large",
            )
        return self.restore_planned(plan, to)

    def restore_planned(self, plan: Restoring, to: str | None) -> tuple[Entry, Snapshot]:
        """A restore `plan_restore` decided, within this request (`to`: as the caller gave it)."""
        snap, tree, fs = plan.snap, self.tree(plan.snap.name)[1], self.fs
        entry = tree.stat(plan.src)
        held = Change(snap.bytes, snap.files) if plan.src == "/" else _held(tree, plan.src)
        with fs._leases(plan.dst), fs.quota.change(held):
            self.check_free(plan.dst, to)
            try:
                self._copy_out(tree, entry, plan.dst)
            except BaseException:
                with contextlib.suppress(OSError):
                    dst = fs.ns.host(plan.dst)
                    shutil.rmtree(dst) if entry.type == "dir" else os.unlink(dst)
                raise
        return fs.ns.stat(plan.dst), snap

    def plan_restore(self, name: str, path: str, to: str | None, replace: bool, inline: int) -> Restoring:
        """Where a restore goes and whether it holds more than `inline` entries (then it is a
        job's: `restore_page`); with `replace`, what is there now goes to the trash first."""
        snap, tree = self.tree(name)
        src = paths.normalize(path)
        large = tree.stat(src).type == "dir" and _over(tree, src, inline)
        dst = paths.normalize(to) if to else Under(snap.path).path(src)
        if dst == "/":
            raise ConflictError(
                "/ is the root directory; restore it elsewhere with `to`", code="already-exists"
            )
        fs = self.fs
        if replace and fs.ns.exists(dst):
            fs.trash_tree(dst) if fs.ns.stat(dst).type == "dir" else fs.delete(dst)
        return Restoring(snap, src, dst, large)

    def check_free(self, dst: str, to: str | None) -> None:
        """409 when the destination is taken (under its lease); its parent folders made."""
        if self.fs.ns.exists(dst):
            hint = "" if to else "; restore it elsewhere with `to`, or with `replace`"
            raise ConflictError(f"{dst} already exists{hint}", code="already-exists")
        self.fs.ns.mkdir(paths.parent(dst), parents=True)

    def restore_page(
        self, name: str, src: str, dst: str, cursor: str | None, entries: int
    ) -> tuple[str | None, int]:
        """A restore job's step: the next `entries` of the snapshot's `src`, in the walk's order
        from `cursor`, copied to `dst` with their records and Merkle nodes (a page done again
        writes the same); (the cursor, None when done; the files copied)."""
        _snap, tree = self.tree(name)
        steps = list(islice(walk(tree, src, PRE, cursor), max(1, min(entries, PAGE))))
        if not steps:
            return None, 0
        files = [under(dst, s.rel) for s in steps if not s.is_dir]
        before = sum((Change(e.size, 1) for f in files if (e := self.fs.ns.file_entry(f))), Change())
        after = sum((Change(tree.stat(under(src, s.rel)).size, 1) for s in steps if not s.is_dir), Change())
        with self.fs.quota.change(after - before):  # refused over the quota: the job stops, saying so
            self._copy_steps(tree, src, dst, steps)
        return steps[-1].rel, len(files)

    def _copy_out(self, tree: Namespace, entry: Entry, dst: str) -> None:
        """The snapshot's `entry` (file or folder) written at `dst` in the namespace, then its
        file records and Merkle nodes, from what the copy wrote (no second pass over EFS)."""
        if entry.type == "file":
            self._copy_steps(tree, entry.path, dst, [Step("", False)])
        else:
            self._copy_steps(tree, entry.path, dst, walk(tree, entry.path, PRE))

    def _copy_steps(self, tree: Namespace, src_path: str, dst: str, steps: Iterable[Step]) -> None:
        fs = self.fs
        # the snapshot's tree seen as a FileSystem's namespace, for `_require_content`'s touch
        reader = type(fs)(fs.user, tree, fs.records, fs.objects, fs.s3, fs.bucket, quota=Quota(None, fs.user))
        src, target = Under(src_path), Under(dst)
        written: list[_Written] = []  # appended from the pool's threads (list.append is atomic)
        folders: list[str] = []

        def copy(rel: str) -> int:
            found, path = tree.stat(src.path(rel)), target.path(rel)
            if found.storage == "large":
                reader._require_content(found)  # touched before the restored link appears
                link = tree.read_link(found.path)
                made = fs.ns.write_link(path, link)
                record = {"kind": "large", "size": link.size, "content_hash": link.content_hash}
                written.append(_Written(path, record, link.content_hash, made.mtime))
            else:
                data = tree.read(found.path)
                made = fs.ns.write(path, data, mode=found.mode or 0o640, mtime=found.mtime)
                record = {"kind": "small", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                written.append(_Written(path, record, content.hash_bytes(data), made.mtime))
            return found.size

        def make_dir(rel: str) -> None:
            folders.append(target.path(rel))
            fs.ns.mkdir(target.path(rel))

        _copy_tree(iter(steps), make_dir, copy)
        self._index(written, folders)

    def _index(self, written: list[_Written], folders: list[str]) -> None:
        """File records in batches, beside file nodes in batches with each folder above them
        invalidated once (MerkleRecords.files_written; both make a missing folder entry by one
        conditional put, so they agree on its id), and the folders holding no file made."""
        fs = self.fs
        with ThreadPoolExecutor(1) as beside:  # the two indexes side by side: each waits on DynamoDB
            records = beside.submit(fs.records.put_files, fs.user, {w.path: w.record for w in written})
            fs.merkle.files_written([(w.path, w.digest, w.mtime) for w in written])
            records.result()
        holding = {a for w in written for a in _ancestors(w.path)}
        for folder in folders:
            if folder not in holding:
                fs.merkle.dir_made(folder)

    # --- removing --------------------------------------------------------------------------------
    def remove(self, name: str) -> Snapshot:
        """Remove a snapshot for good (one being made too: its job then ends); the content only
        it named is then the collector's."""
        snap = self.get(name)
        self.abandon(snap)
        return snap


def _lease(table: Any, snap: Snapshot) -> Lease:
    lease = Lease(table, snap.by, snapshot_owner(snap.id), lease_s=LEASE_S)
    lease.held = [snap.path]
    return lease


def _abandon(table: Any, area: SnapshotArea, snap: Snapshot) -> None:
    area.remove(snap.id)
    CopyMarks(table, snap.by, snap.id).drop(None)
    _lease(table, snap).release()
    SnapshotRecords(table, snap.by).delete(snap.name)


def abandon_stale(table: Any, namespaces_dir: str, now: float | None = None) -> list[str]:
    """Snapshots left "making" whose lease lapsed (their job stopped and nobody resumed it):
    removed, as their job would on its next step; upkeep's walk runs this. Their names."""
    now = time.time() if now is None else now
    root, gone = snapshot_root(namespaces_dir), []
    for user in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        for snap in SnapshotRecords(table, user).all():
            if snap.state == MAKING and snap.at < now - LEASE_S and not _lease_kept(table, snap, now):
                _abandon(table, SnapshotArea(namespaces_dir, user), snap)
                gone.append(f"{user}/{snap.name}")
    return gone


def _lease_kept(table: Any, snap: Snapshot, now: float) -> bool:
    """Whether the snapshot's lease on its folder is still its own and unexpired."""
    item = table.get_item(Key={"pk": f"LOCK#{snap.by}", "sk": snap.path}, ConsistentRead=True).get("Item")
    return bool(item) and item["owner"] == snapshot_owner(snap.id) and int(item["expires"]) >= now


@dataclass(frozen=True)
class Restoring:
    """A restore decided: from `src` of the snapshot to `dst`; `large`: more than one request copies."""

    snap: Snapshot
    src: str
    dst: str
    large: bool


@dataclass(frozen=True)
class _Written:
    """A file a restore wrote: its record and its Merkle node's digest and mtime."""

    path: str
    record: dict[str, Any]
    digest: str
    mtime: float


def _ancestors(path: str) -> Iterator[str]:
    while path != "/":
        path = paths.parent(path)
        yield path


def _held(tree: Namespace, path: str) -> Change:
    """What a part of a snapshot holds (its files' sizes), for the quota of its restore."""
    entries = list(tree.walk_files(path))
    return Change(sum(e.size for e in entries), len(entries))


def _over(ns: Namespace, path: str, limit: int) -> bool:
    """Whether the tree at `path` holds more than `limit` entries (or takes longer to count than
    one request can spend on it)."""
    _files, entries, cursor = count(ns, path, None, time.monotonic() + COUNT_S, limit + 1)
    return cursor is not None or entries > limit


def remove_all(namespaces_dir: str, user: str) -> None:
    """A deleted user's snapshots on EFS (their records go with the user's partitions)."""
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(SnapshotArea(namespaces_dir, user).root)
