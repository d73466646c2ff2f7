"""The trash: `rm FILE` and `rm -r DIR` move what they remove here, in one EFS rename.

Where. `<efs root>/trash/<user>/<item id>/<name>`, beside the namespaces (as the versions area
is), so listings, sync, the Merkle walk, the reconciler and the usage walk never see it, and a
rename into it never crosses a file system. The item id starts with the time in milliseconds
(store/trash_records.py), so upkeep tells an item's age from its folder's name alone.

Order of a removal, under the path's lease: the collector's tree epoch is bumped (a link moving
out of a namespace the collector has not walked yet into a trash it has walked must not be
missed: the round that sees the bump reclaims nothing), then the one rename, then the folder's
entry in the directory index moves below the trash's root, named by the item (store/dir_index.py:
one rewrite, its file records stay keyed by the folder's id, out of every walk from the root), the
Merkle node becomes a tombstone and the trash record is written. A restore moves the entry back;
a purge or an emptying deletes the records below it. EFS is the source of truth, so from the rename on the path is gone for every
reader; the records follow under the same lease, and a crash between leaves records of files
EFS no longer holds, which upkeep's reconciler removes. A new file at the same path right after
the answer is an ordinary write: its lease waits for none, its record replaces nothing of the
trashed tree's (those are gone or, after a crash, repaired against EFS).

What is kept. The collector marks every link file under the trash area (store/collector.py), so
a trashed large file's object stays until its item is purged or emptied; a trashed packed small
file's segment is never deleted while a stub in the trash names it (fs/segments.py). Upkeep
purges items older than the retention (the user's own, else the deployment's
`InstanceConfig.trash_retention_s`, 30 days), and the content they named is then the collector's.

Emptying and restoring race safely without a lock: each first claims what it takes by one
rename (restore: the item's entry into the namespace; purge and emptying: the item's folder to
a `.purging-` name), so the loser finds nothing and answers 404. Emptying then marks the record
(`emptying`: no longer listed) and removes small items in the request; what a large or uncounted
one holds is removed by bounded steps (`drain`) of the user's emptying job, not inside an API
call (a 100,000-file item's count and deletes go well past API Gateway's 29 s).
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .. import paths
from ..errors import ConflictError, NotFoundError
from ..store.collector import bump_tree_epoch, trash_root
from ..store.quotas import Change, Quota
from ..store.records import Records
from ..store.trash_records import TrashItem, TrashRecords, checked_item_id, new_item_id, trashed_at
from .namespace import Entry
from .reconcile import expected_record
from .tree_walk import PRE, under, walk

if TYPE_CHECKING:
    from .operations import FileSystem

PURGING = ".purging-"
# a listing or usage report counts pending items for this long in all, well inside API Gateway's
# 29 s; what it did not finish stays pending, for upkeep's purge (no budget) or the next reader
READ_SETTLE_S = 5.0


class TrashArea:
    """One user's trash folders on EFS (no records): what upkeep and the collector walk."""

    def __init__(self, namespaces_dir: str, user: str) -> None:
        self.root = os.path.join(trash_root(namespaces_dir), user)

    def folder(self, item_id: str) -> str:
        return os.path.join(self.root, checked_item_id(item_id))

    def entry(self, item_id: str) -> str | None:
        """The host path of what the item holds (its one entry), None when it is gone."""
        try:
            names = os.listdir(self.folder(item_id))  # its one entry, whatever its name (".env" too)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return os.path.join(self.folder(item_id), names[0]) if names else None

    def item_ids(self) -> list[str]:
        """Every item folder's id, oldest first."""
        if not os.path.isdir(self.root):
            return []
        return sorted(n for n in os.listdir(self.root) if not n.startswith("."))

    def claim(self, item_id: str) -> bool:
        """Take the item's folder for removal (a restore after it finds nothing); False when it
        was gone (restored, or claimed meanwhile)."""
        try:
            os.rename(self.folder(item_id), self.claimed(item_id))
        except FileNotFoundError:
            return False
        return True

    def claimed(self, item_id: str) -> str:
        return os.path.join(self.root, PURGING + checked_item_id(item_id))

    def purge(self, item_id: str) -> bool:
        """Remove the item's folder; False when it was gone (restored or purged meanwhile)."""
        if not self.claim(item_id):
            return False
        shutil.rmtree(self.claimed(item_id), ignore_errors=True)
        return True

    def remove_claimed(self, item_id: str, deadline: float, limit: float) -> tuple[int, bool]:
        """Remove a claimed folder's files, deepest first, until `deadline` (monotonic) or `limit`
        files; (files removed, whether the folder is gone). What is removed stays so."""
        top, removed = self.claimed(item_id), 0
        for at, dirs, files in os.walk(top, topdown=False):
            links = [d for d in dirs if os.path.islink(os.path.join(at, d))]  # walked as names only
            for name in files + links:
                if removed >= limit or time.monotonic() > deadline:
                    return removed, False
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(at, name))
                removed += 1
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(at)
        return removed, not os.path.lexists(top)

    def leftovers(self) -> None:
        """Folders a purge that crashed had claimed but not removed."""
        if os.path.isdir(self.root):
            for name in os.listdir(self.root):
                if name.startswith(PURGING):
                    shutil.rmtree(os.path.join(self.root, name), ignore_errors=True)


class Trash:
    """One user's trash, over the user's FileSystem (its namespace, records, quota and leases)."""

    def __init__(self, fs: FileSystem) -> None:
        self.fs = fs
        self.records = TrashRecords(fs.records.table, fs.user)
        self.area = TrashArea(os.path.dirname(fs.ns.root), fs.user)

    # --- into the trash (called by FileSystem.delete and .rmdir under the path's lease) ---------
    def take(self, entry: Entry, held: Change) -> TrashItem:
        """Move the file or folder `entry` (holding `held`) into the trash: one rename on EFS."""
        now = time.time()
        item = TrashItem(new_item_id(now), entry.path, entry.type, held.bytes, held.files, now, self.fs.user)
        folder = self.area.folder(item.item)
        os.makedirs(folder)
        bump_tree_epoch(self.fs.records.table)
        os.rename(self.fs.ns.host(entry.path), os.path.join(folder, entry.name))
        return item

    def listing(self) -> list[TrashItem]:
        """What the trash holds, newest first: pending items counted first, for READ_SETTLE_S in
        all; one not counted by then is listed pending (upkeep counts it whole)."""
        listed = [i for i in self.records.all() if not i.emptying]  # an emptied one is its job's to count
        return list(reversed([after for _, after in self._settle_all(listed)]))

    def settle(self, item: TrashItem, budget_s: float | None = None) -> TrashItem:
        """A pending item counted: its size and files written to its record and taken off the
        quota's count, once, whoever counts it first (`rm -r` within `budget_s`, else the trash
        listing, the usage report, a write the quota would refuse, or upkeep). The item as it is
        when the count did not end within `budget_s`."""
        if not item.pending:
            return item
        held = settle_item(self.fs.records, self.records, self.fs.quota, item, budget_s)
        return item if held is None else replace(item, size=held.bytes, files=held.files, pending=False)

    def totals(self) -> dict[str, int]:
        """Bytes, files and items in the trash (pending items counted first, as by `listing`):
        the usage report's line."""
        self.settle_pending()
        return self.records.totals()

    def settle_pending(self) -> int:
        """Count pending items for READ_SETTLE_S in all; how many were counted here (also the
        quota's last resort before it refuses a write)."""
        counted = self._settle_all(self.records.all())
        return sum(1 for before, after in counted if before.pending and not after.pending)

    def _settle_all(self, items: list[TrashItem]) -> list[tuple[TrashItem, TrashItem]]:
        """Each item as held and as after counting it (pending ones for READ_SETTLE_S in all)."""
        deadline = time.monotonic() + READ_SETTLE_S
        return [(i, self.settle(i, max(0.0, deadline - time.monotonic()))) for i in items]

    def get(self, item_id: str) -> TrashItem:
        item = self.records.get(checked_item_id(item_id))
        if item is None or self.area.entry(item_id) is None:
            raise NotFoundError(f"no item {item_id} in the trash", code="trash-item-not-found")
        return item

    # --- out of it -----------------------------------------------------------------------------
    def restore(self, item_id: str, to: str | None = None) -> tuple[Entry, TrashItem]:
        """Put an item back where it was, or at `to`; 409 when something is there now (nothing
        is overwritten: give `to`). Folders above it removed since are made again."""
        item = self.get(item_id)
        dst = paths.normalize(to or item.path)
        if dst == "/":
            raise ConflictError("/ is the root directory", code="already-exists")
        fs = self.fs
        with fs._leases(dst), fs.quota.change(Change(item.size, item.files)):
            if fs.ns.exists(dst):
                hint = "" if to else "; restore it elsewhere with `to`"
                raise ConflictError(f"{dst} already exists{hint}", code="already-exists")
            fs.ns.mkdir(paths.parent(dst), parents=True)
            bump_tree_epoch(fs.records.table)
            try:
                os.rename(self.area.entry(item_id) or "", fs.ns.host(dst))
            except FileNotFoundError:  # emptied or restored by another request meanwhile
                raise NotFoundError(f"no item {item_id} in the trash", code="trash-item-not-found") from None
            self.records.delete(item_id)
            shutil.rmtree(self.area.folder(item_id), ignore_errors=True)
            if fs.records.from_trash(fs.user, item_id, dst):  # the folder's entry, and all below it
                fs.merkle.dir_made(dst)  # its node names its id again: the nodes below kept their hashes
            else:  # a file, or a folder trashed without its entry (a crash, an older layout)
                self._index(dst)
        return fs.ns.stat(dst), item

    def _index(self, path: str) -> None:
        """File records and Merkle nodes of what was put back with no folder entry to bring them
        (O(files))."""
        fs, dirs, files = self.fs, list[str](), list[str]()
        for step in walk(fs.ns, path, PRE):
            (dirs if step.is_dir else files).append(under(path, step.rel))
        records = {p: r for p in files if (r := expected_record(fs.ns, p)) is not None}
        fs.records.put_files(fs.user, records)
        for folder in dirs:
            fs.merkle.dir_made(folder)
        hashed = [fs.ns.stat_hashed(p) for p in records]
        fs.merkle.files_written([(e.path, e.content_hash or "", e.mtime) for e in hashed])

    def empty(self, item_id: str | None = None, inline_files: float = math.inf) -> tuple[list[str], bool]:
        """Remove one item for good (404 when it is not there), or every item: each is claimed
        (one rename: gone from the listing at once) and marked emptying, and counted items of at
        most `inline_files` files are removed here. (The ids emptied, whether a job must remove
        the rest: `drain`.) Their content is then the collector's (large) or gone (small)."""
        if item_id is not None:
            self.get(item_id)
            ids = [item_id]
        else:
            ids = sorted({i.item for i in self.records.all() if not i.emptying} | set(self.area.item_ids()))
        emptied = [i for i in ids if self.area.claim(i)]
        for i in emptied:  # only what this call claimed: a restore may be taking the others back
            self.records.mark_emptying(i)
        left = False
        for item in self._emptying():
            if item.pending and inline_files == math.inf:
                item = self.settle(item)
            small = not item.pending and item.files <= inline_files
            left |= not (small and self._remove(item, None, inline_files)[1])
        return emptied, left

    def drain(self, deadline: float, limit: int) -> Drained:
        """Remove what emptied items hold, until `deadline` (monotonic) or `limit` files: a step
        of the emptying job (fs/tree_job.py), which runs until nothing is left. Each item is
        counted first (the quota still holds a pending one), then its files go, then its records.
        A count is whole, whatever the budget (one cut short would begin again at the next step,
        for ever): the step function's timeout is 6 times its budget."""
        out = Drained()
        items = [self.settle(i) for i in self._emptying()]
        out.held = None if any(i.pending for i in items) else sum(i.files for i in items)
        for item in items:
            if item.pending or time.monotonic() > deadline or out.files >= limit:
                break
            removed, done = self._remove(item, deadline, limit - out.files)
            out.files += removed
            if not done:
                break
        out.finished = not self._emptying()
        return out

    def _emptying(self) -> list[TrashItem]:
        return [i for i in self.records.all() if i.emptying]

    def _remove(self, item: TrashItem, deadline: float | None, limit: float) -> tuple[int, bool]:
        """An emptied item's files, records and record, as far as `deadline` and `limit` files
        allow; (files removed, whether all of it went)."""
        until = math.inf if deadline is None else deadline
        removed, gone = self.area.remove_claimed(item.item, until, limit)
        if not gone or not self.fs.records.purge_trashed(self.fs.user, item.item, deadline):
            return removed, False
        self.records.delete(item.item)
        return removed, True


@dataclass
class Drained:
    """What one `Trash.drain` did: the files the emptied items held when it began (None while
    one is still to be counted), the files it removed, and whether no emptied item is left."""

    held: int | None = 0
    files: int = 0
    finished: bool = False


# --- upkeep ---------------------------------------------------------------------------------------
@dataclass
class Purged:
    items: list[str] = field(default_factory=list)
    records: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"items": len(self.items), "records": self.records}


def settle_item(
    records: Records, trash: TrashRecords, quota: Quota, item: TrashItem, budget_s: float | None = None
) -> Change | None:
    """What a pending trash item holds, from the file records below its folder (which nothing
    writes once trashed); the record settled and the quota's count lowered by it if this call
    settled it. None when the count did not end within `budget_s`.

    A crash between the record's update and the quota's leaves the count high until upkeep
    recounts it from the records (hourly), which counts no trash."""
    deadline = None if budget_s is None else time.monotonic() + budget_s
    below = records.trashed_files(trash.user, item.item, deadline)
    if below is None:
        return None
    held = Change(sum(int(r.get("size", 0)) for r in below), len(below))
    if trash.settle(item.item, held.bytes, held.files):
        with quota.change(-held):
            pass
    return held


def count_pending(
    files: Records, trash: TrashRecords, items: Iterable[TrashItem], budget_s: float | None = None
) -> bool:
    """Count each pending item of `items` (for `budget_s` in all); whether there was one."""
    deadline = None if budget_s is None else time.monotonic() + budget_s
    pending = [i for i in items if i.pending]
    for item in pending:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        settle_item(files, trash, Quota(files, trash.user), item, left)
    return bool(pending)


def purge_user(
    table: Any, namespaces_dir: str, user: str, default_s: int, now: float, retention_s: int | None = None
) -> Purged:
    """Purge one user's items older than its retention (`retention_s` overrides every user's)."""
    records, area, files = TrashRecords(table, user), TrashArea(namespaces_dir, user), Records.over(table)
    keep_s = retention_s if retention_s is not None else records.retention(default_s)
    area.leftovers()
    out = Purged()
    count_pending(files, records, records.all())  # before anything goes: the quota still holds them
    for item_id in area.item_ids():
        if trashed_at(item_id) + keep_s <= now and area.purge(item_id):
            out.items.append(item_id)
    on_efs = set(area.item_ids())
    for item in records.all():  # purged now, or gone since (restored, or a crash after a purge)
        if item.item not in on_efs:
            files.purge_trashed(user, item.item)
            records.delete(item.item)
            out.records += 1
    for item_id in out.items:  # purged without a trash record (a crash before it was written)
        files.purge_trashed(user, item_id)
    return out


def purge_trash(
    table: Any,
    namespaces_dir: str,
    default_s: int,
    now: float | None = None,
    retention_s: int | None = None,
    users: list[str] | None = None,
) -> Purged:
    """Every user's expired trash (or `users`'): what upkeep's hourly walk runs before the
    collector, which then reclaims the objects only purged items named."""
    now = time.time() if now is None else now
    root, total = trash_root(namespaces_dir), Purged()
    if users is None:
        users = sorted(os.listdir(root)) if os.path.isdir(root) else []
    for user in users:
        one = purge_user(table, namespaces_dir, user, default_s, now, retention_s)
        total.items += one.items
        total.records += one.records
    return total


def remove_all(namespaces_dir: str, user: str) -> None:
    """A deleted user's whole trash (fs/user_purge.py)."""
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(TrashArea(namespaces_dir, user).root)
