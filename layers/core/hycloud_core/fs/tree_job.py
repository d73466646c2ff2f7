"""One step of a tree job: a copy, move or removal of a tree, from its cursor, within a budget.

The workflow (statemachines/tree_job.asl.json) runs steps until the job ends. A step renews the
job's subtree leases before every batch (so nothing else changes the trees meanwhile, however
long the job runs), does the batch with FileSystem's own per-entry methods, and saves the cursor
and counts. Work between two saves is redone after a crash, and redoing it is harmless: a copy
writes the same bytes again, a removal skips what is gone, moved records have left the source.

Phases: count (files, for progress) → apply (copy: pre-order walk; remove: post-order walk) or,
for a move, rename (one EFS rename, the collector told first) → records (the folder's entry) → finish.
An emptying of the trash has no phases: each step drains what emptied items hold (fs/trash.py).
Making a snapshot: apply (copy the folders not yet copied, fs/snapshot_copy.py) → finish (ready)
→ records (its copy's marks deleted).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from itertools import islice

from ..errors import ConflictError, HyCloudError, NotFoundError
from ..store.locks import Lease
from ..store.quotas import Change
from ..store.tree_jobs import (
    APPLY,
    COUNT,
    EMPTY,
    FAILED,
    FINISH,
    RECORDS,
    RENAME,
    RESTORE,
    SNAPSHOT,
    SUCCEEDED,
    TreeJob,
    TreeJobs,
)
from .operations import FileSystem, in_parallel
from .reconcile import expected_record
from .tree_walk import POST, PRE, Step, count, under, walk

BATCH = 100


@dataclass(frozen=True)
class Budget:
    """How much one step may do: until `deadline` (time.monotonic()) and at most `entries`."""

    deadline: float
    entries: int

    @classmethod
    def of(cls, seconds: float, entries: int) -> Budget:
        return cls(time.monotonic() + seconds, entries)


class TreeJobStep:
    def __init__(self, fs: FileSystem, jobs: TreeJobs, job: TreeJob, budget: Budget) -> None:
        self.fs, self.jobs, self.job, self.budget = fs, jobs, job, budget
        self.lease = Lease(fs.records.table, fs.user, owner=job.owner)
        self.lease.held = list(job.leases)
        self.used = 0

    @property
    def _dst(self) -> str:
        """The destination of a copy or a move (a removal has none)."""
        if self.job.dst is None:
            raise ValueError(f"a {self.job.op} job has no destination")
        return self.job.dst

    def run(self) -> str:
        """Advance the job; its state afterwards (running: call again). Failures are recorded."""
        try:
            while self.job.state not in (SUCCEEDED, FAILED) and self._left() > 0:
                self.lease.renew()
                self._phase()
                self.jobs.save(self.job)
        except HyCloudError as err:
            self.fail(err.code, err.message, err.status)
        if self.job.state == SUCCEEDED:
            self.lease.release()  # only once saved: were the job another execution's, they are its leases
        return self.job.state

    def fail(self, code: str, message: str, status: int = 409) -> None:
        """Record why the job stopped and let go of its trees (they stay as the counts say)."""
        self.job.state, self.job.error = FAILED, {"code": code, "message": message, "status": status}
        self.jobs.save(self.job)
        self.lease.release()

    def _left(self) -> int:
        if time.monotonic() >= self.budget.deadline:
            return 0
        return self.budget.entries - self.used

    def _batch(self) -> int:
        return max(1, min(BATCH, self._left()))

    def _phase(self) -> None:
        job = self.job
        if job.op == EMPTY:
            return self._empty()
        if job.op == SNAPSHOT:
            return self._snapshot()
        if job.op == RESTORE:
            return self._restore()
        handler = {
            COUNT: self._count,
            APPLY: self._copy if job.op == "copy" else self._remove,
            RENAME: self._rename,
            RECORDS: self._move_records,
            FINISH: self._finish,
        }[job.phase]
        handler()

    def _empty(self) -> None:
        """Count and remove what emptied trash items hold, as far as the budget goes; the total
        is known once every item is counted."""
        job = self.job
        drained = self.fs.trash.drain(self.budget.deadline, self._left())
        if job.files is None and drained.held is not None:
            job.files = job.done + drained.held
        job.done += drained.files
        self.used += max(drained.files, 1)
        if drained.finished:
            job.files, job.state = job.done, SUCCEEDED

    def _snapshot(self) -> None:
        """Copy what is left of a snapshot's tree, then make it ready, then drop its marks."""
        from .snapshots import Snapshots

        job, snaps = self.job, Snapshots(self.fs)
        if job.phase == RECORDS:
            if snaps.drop_marks(snaps.get(self._dst), self.budget.deadline):
                job.state = SUCCEEDED
            self.used += 1
            return
        snap = snaps.making(self._dst)  # its lease kept on (gone: the job fails, saying why)
        if job.phase == FINISH:
            job.files = snaps.finish(snap).files
            return self._next(RECORDS)
        job.cursor, copied = snaps.copy(snap).walk_from(job.cursor, self.budget.deadline, self._left())
        job.done += copied
        self.used += max(copied, 1)
        if job.cursor is None:
            self._next(FINISH)

    def _restore(self) -> None:
        """Copy the next page of a snapshot's tree back to the job's destination (fs/snapshots.py)."""
        from .snapshots import Snapshots

        job = self.job
        if job.phase == FINISH:
            job.files, job.state = job.done, SUCCEEDED
            return
        job.cursor, files = Snapshots(self.fs).restore_page(
            job.snapshot or "", job.src, self._dst, job.cursor, self._left()
        )
        job.done += files
        self.used += max(files, 1)
        if job.cursor is None:
            self._next(FINISH)

    def _next(self, phase: str) -> None:
        self.job.phase, self.job.cursor = phase, None

    # --- phases ------------------------------------------------------------------------------
    def _count(self) -> None:
        job = self.job
        files, entries, job.cursor = count(
            self.fs.ns, job.src, job.cursor, self.budget.deadline, limit=max(1, self._left())
        )
        job.counted += files
        self.used += entries
        if job.cursor is None:
            job.files = job.counted
            self._next(RENAME if job.op == "move" else APPLY)

    def _page(self, order: str) -> list[Step]:
        return list(islice(walk(self.fs.ns, self.job.src, order, self.job.cursor), self._batch()))

    def _copy(self) -> None:
        job = self.job
        self._check_copy_target()
        page = self._page(PRE)
        if not page:
            return self._next(FINISH)
        growth = self._files(job.src, page) - self._files(self._dst, page)  # a redone page replaces
        with self.fs.quota.change(growth):  # refused over the quota: the job stops, saying where
            made = self.fs.copy_page(job.src, self._dst, page)
        records = in_parallel(partial(expected_record, self.fs.ns), made)
        # a file gone since its copy (None) has no record to write
        kept = {path: r for path, r in zip(made, records, strict=True) if r is not None}
        self.fs.records.put_files(self.fs.user, kept)
        job.done += len(made)
        job.cursor, self.used = page[-1].rel, self.used + len(page)

    def _files(self, root: str, page: list[Step]) -> Change:
        """Bytes and files the page's files occupy below `root` (those that exist), for the quota."""

        def size(step: Step) -> Change:
            try:
                entry = self.fs.ns.stat(under(root, step.rel))
            except NotFoundError:
                return Change()
            return Change(entry.size, 1) if entry.type == "file" else Change()

        return sum(in_parallel(size, [s for s in page if not s.is_dir]), Change())

    def _check_copy_target(self) -> None:
        """A resumed copy whose destination was removed meanwhile starts over."""
        if self.fs.ns.stat(self.job.src).type != "dir":
            raise ConflictError(f"{self.job.src} is no longer a directory", code="not-a-directory")
        if self.job.cursor is not None and not self.fs.ns.exists(self._dst):
            self.job.cursor, self.job.done = None, 0

    def _remove(self) -> None:
        job = self.job
        page = self._page(POST)
        if not page:
            return self._next(FINISH)
        with self.fs.quota.change(-self._files(job.src, page)):
            self.fs.remove_page(job.src, page)
        files = [under(job.src, s.rel) for s in page if not s.is_dir]
        self.fs.records.delete_files(self.fs.user, files)  # also of files a redone page found gone
        job.done += len(files)
        job.cursor, self.used = page[-1].rel, self.used + len(page)

    def _rename(self) -> None:
        job, ns = self.job, self.fs.ns
        if ns.exists(job.src):  # else renamed already, by a step that stopped before saving
            if ns.exists(self._dst):
                raise ConflictError(f"{self._dst} already exists", code="already-exists")
            self.fs.records.rewrite_subtree(self.fs.user, self._dst, None)  # stale records only
            self.fs.rename_tree(ns.stat(job.src), self._dst)
        elif not ns.exists(self._dst):
            raise NotFoundError(f"{job.src} does not exist")
        self._next(RECORDS)
        self.used += 1

    def _move_records(self) -> None:
        """The folder's entry moves, and with it every record below (store/dir_index.py); only
        records of the layout keyed by path, before its migration, move one by one."""
        moved = self.fs.records.move_page(self.fs.user, self.job.src, self._dst, self._batch())
        self.job.done = min(self.job.done + moved, self.job.files or self.job.counted)
        self.used += max(moved, 1)
        if not moved:
            self.job.done = self.job.files or self.job.counted
            self._next(FINISH)

    def _finish(self) -> None:
        if self.job.op == "remove":  # records no walk reached (none unless EFS and records differed)
            self.fs.records.rewrite_subtree(self.fs.user, self.job.src, None)
        self._merkle()
        self.job.state = SUCCEEDED

    def _merkle(self) -> None:
        """The Merkle hashes follow the whole tree at once (each step does that much again if redone)."""
        job, merkle = self.job, self.fs.merkle
        if job.op == "remove":
            merkle.removed(job.src)
        elif job.op == "move":
            merkle.moved(job.src, job.dst or "")
        else:
            merkle.copied(job.src, job.dst or "")
