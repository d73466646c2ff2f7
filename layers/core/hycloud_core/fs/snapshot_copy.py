"""Copy-on-write for a snapshot being made: `create` answers at once, the tree is copied after.

The snapshot's moment is when its lease on the folder is held (fs/snapshots.py `begin`): every
write below it has ended, and none starts unseen, because the lease is an ancestor of whatever a
write below takes (store/locks.py `on_snapshot`). From then on a folder below is copied into the
snapshot (its own files; its subfolders made, empty) before anything changes it, by whoever comes
first: the snapshot's job walking the tree, or a write. A folder copied is marked
(store/snapshot_marks.py) and may change from then on; one not copied has not changed since the
moment. Copies go top-down, so the copied folders always hang together from the snapshot's
folder, and a folder is in the snapshot when its parent's copy made it (it was there at the
moment) and it has not left since (a folder leaving is copied whole first).

Before a write at a path below the snapshot's folder:
- every folder from the snapshot's folder down to the path's parent is copied (if in the snapshot);
- a folder at the path (a move, a removal, a copy of it) is copied with all its tree, as it may
  leave. That is bounded by COPY_S: a write that would take longer is refused busy (409, retry)
  while the job copies the tree.

Writes above the snapshot's folder (moving or removing what holds it) wait for the snapshot to
be ready, as they would for any lease below them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import batched, groupby
from typing import TYPE_CHECKING

from .. import paths
from ..errors import ConflictError, NotFoundError
from ..store.collector import snapshot_root
from ..store.locks import SNAPSHOT_OWNER
from ..store.quotas import Change
from ..store.snapshot_marks import CopyMarks
from .namespace import Namespace
from .tree_walk import PRE, Step, walk

if TYPE_CHECKING:
    from .operations import FileSystem

COPY_S = 8.0  # a write copies at most this long into a snapshot before it is refused busy
PAGE = 100  # files of a folder copied side by side, then the claim renewed; folders of a job's page
FOLDERS = 4  # folders of one depth the job copies side by side
THREADS = 8  # EFS is latency-bound: a folder's files are copied side by side
WAIT = 0.05


class SnapshotCopy:
    """The copying of one snapshot being made: the live folder `folder` into snapshot `snap_id`."""

    def __init__(self, fs: FileSystem, snap_id: str, folder: str) -> None:
        self.fs, self.folder = fs, paths.normalize(folder)
        area = os.path.join(snapshot_root(os.path.dirname(fs.ns.root)), fs.user)
        if not os.path.isdir(os.path.join(area, snap_id)):  # removed: never made again by a copy
            raise NotFoundError(f"snapshot {snap_id} is gone", code="snapshot-not-found")
        self.tree = Namespace(area, snap_id)
        self.marks = CopyMarks(fs.records.table, fs.user, snap_id)

    def rel(self, path: str) -> str:
        """`path` (below the folder) as a path within the snapshot."""
        path = paths.normalize(path)
        if path == self.folder:
            return "/"
        return path[len(self.folder.rstrip("/")) :]

    def below(self, path: str) -> bool:
        path = paths.normalize(path)
        return path == self.folder or path.startswith(self.folder.rstrip("/") + "/")

    def _listed(self, rel: str) -> bool:
        """Whether the snapshot has a folder at `rel` (its parent's copy made it)."""
        try:
            return rel == "/" or self.tree.stat(rel).type == "dir"
        except NotFoundError:
            return False

    # --- before a write ----------------------------------------------------------------------
    def before(self, path: str, deadline: float) -> None:
        """Copy what a write at `path` may change, as it was at the snapshot's moment."""
        if not self.below(path) or paths.normalize(path) == self.folder:
            return
        if not self.chain(paths.parent(path), deadline):
            return
        live = self.fs.ns.host(path)
        if os.path.isdir(live) and not os.path.islink(live) and self._listed(self.rel(path)):
            self.whole(self.rel(path), deadline)

    def chain(self, folder: str, deadline: float) -> bool:
        """Copy every folder from the snapshot's folder down to `folder`; whether `folder` is in
        the snapshot (False: it came since, and nothing below it is the snapshot's)."""
        rels = list(_chain(self.rel(folder)))
        done = self.marks.done(rels)
        for rel in rels:
            if not self._listed(rel):
                return False
            if rel not in done:
                self.copy_folder(rel, deadline)
        return True

    def whole(self, rel: str, deadline: float) -> None:
        """Copy the folder at `rel` (in the snapshot, its parent copied) and all below it."""
        if rel not in self.marks.done([rel]):
            self.copy_folder(rel, deadline)
        for name in self.tree.names(rel):
            child = _join(rel, name)
            if self._listed(child) and self.fs.ns.exists(self._live(child)):
                self.whole(child, deadline)

    # --- copying one folder ------------------------------------------------------------------
    def copy_folder(self, rel: str, deadline: float, whole: bool = False) -> Change:
        """Copy a folder's own files and make its subfolders, once (whoever claims it). Another
        copier is waited for until `deadline`, and so is the copy, unless `whole` (the job)."""
        while not self.marks.claim(rel):
            if rel in self.marks.done([rel]):
                return Change()
            if time.monotonic() > deadline:
                raise self._busy(rel)
            time.sleep(WAIT)
        try:
            held = self._copy_entries(rel, None if whole else deadline)
        except BaseException:
            self.marks.give_up(rel)
            raise
        self.marks.finish(rel, held.files, held.bytes)
        return held

    def _busy(self, rel: str) -> ConflictError:
        return ConflictError(
            f"{self._live(rel)} is being copied into a snapshot; retry in a moment", code="busy"
        )

    def _copy_entries(self, rel: str, deadline: float | None) -> Change:
        entries, _ = self.fs.ns.listdir(self._live(rel))
        held = Change()
        for folder in (e for e in entries if e.type == "dir"):
            self.tree.mkdir(_join(rel, folder.name))
        files = [e for e in entries if e.type == "file"]
        with ThreadPoolExecutor(THREADS) as pool:
            for page in batched(files, PAGE):
                if deadline is not None and time.monotonic() > deadline:
                    raise self._busy(rel)
                held += sum(pool.map(lambda e: self._copy_file(rel, e.name), page), Change())
                self.marks.renew(rel)
        return held

    def _copy_file(self, rel: str, name: str) -> Change:
        """One file as it is now (a large one's link only; a packed one's bytes from its segment,
        so the snapshot depends on no segment)."""
        fs, src, dst = self.fs, self._live(_join(rel, name)), _join(rel, name)
        entry = fs.ns.stat(src)
        if entry.storage == "large":
            fs._require_content(entry)  # touched before the new link appears (store/collector.py)
            link = fs.ns.read_link(src)
            link.history, link.history_erasure = [], {}
            self.tree.write_link(dst, link)
        else:
            self.tree.write(dst, fs.ns.read(src), mode=entry.mode or 0o640, mtime=entry.mtime)
        return Change(entry.size, 1)

    def _live(self, rel: str) -> str:
        return Under(self.folder).path(rel)

    # --- reading while it is made ------------------------------------------------------------
    def locate(self, rel: str) -> str:
        """Where the snapshot's `rel` is read now: the folder (within the snapshot) not copied
        yet that holds it, read live at its path since it has not changed since the moment; ""
        when it is read from the snapshot's own folder. NotFoundError when the snapshot has none."""
        chain = list(_chain(paths.normalize(rel)))
        done = self.marks.done(chain)
        for folder in chain:
            if folder in done:
                continue
            if folder != "/" and self.tree.stat(folder).type != "dir":  # NotFoundError: not its
                return ""  # a file of a copied folder
            return folder
        return ""

    def unchanged(self, folder: str) -> bool:
        """Whether a folder located live is still not copied: what was read there was the moment's."""
        return folder not in self.marks.done([folder])

    # --- the job's walk ----------------------------------------------------------------------
    def walk_from(
        self, cursor: str | None, deadline: float, limit: int | None = None, folders: int = PAGE
    ) -> tuple[str | None, int]:
        """Copy the folders not yet copied, in the walk's order from `cursor`, `folders` at
        a time, until `deadline` or past `limit` entries (folders walked, files copied); (the
        cursor to go on from, None when the walk is over; files copied)."""
        copied, walked, steps = 0, 0, walk(self.fs.ns, self.folder, PRE, cursor)
        size = max(1, min(folders, limit or folders))
        with ThreadPoolExecutor(FOLDERS) as pool:
            for page in batched(_folders(steps), size):
                copied += self._copy_page(["/" + s.rel if s.rel else "/" for s in page], pool, deadline)
                walked += len(page)
                if time.monotonic() > deadline or (limit is not None and walked + copied >= limit):
                    return page[-1].rel, copied
        return None, copied

    def _copy_page(self, rels: list[str], pool: ThreadPoolExecutor, deadline: float) -> int:
        """A page of the walk's folders, a depth at a time (a parent before its folders), the
        folders of one depth side by side; a folder is the snapshot's when its copied parent
        listed it. The files copied."""
        done, copied = self.marks.done(rels + [paths.parent(r) for r in rels if r != "/"]), 0
        for _level, group in groupby(sorted(rels, key=_depth), key=_depth):
            due = [r for r in group if r not in done and (r == "/" or paths.parent(r) in done)]
            due = [r for r, listed in zip(due, pool.map(self._listed, due), strict=True) if listed]
            copied += sum(
                h.files for h in pool.map(lambda r: self.copy_folder(r, deadline + COPY_S, True), due)
            )
            done.update(due)
        return copied


class Under:
    """Paths of a folder's tree seen from the folder: "/" is the folder itself."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def path(self, rel: str) -> str:
        rel = paths.normalize(rel)
        return self.folder if rel == "/" else (self.folder.rstrip("/") + rel)


def _depth(rel: str) -> int:
    return 0 if rel == "/" else rel.count("/")


def _folders(steps: Iterator[Step]) -> Iterator[Step]:
    return (s for s in steps if s.is_dir)


def _chain(rel: str) -> Iterator[str]:
    """ "/" and every folder down to `rel`, top first."""
    yield "/"
    parts = [p for p in rel.split("/") if p]
    for i in range(1, len(parts) + 1):
        yield "/" + "/".join(parts[:i])


def _join(rel: str, name: str) -> str:
    return f"{rel.rstrip('/')}/{name}"


def before_change(fs: FileSystem, markers: dict[str, str], path: str) -> None:
    """`on_snapshot` of the user's leases: copy into each snapshot being made above `path` what
    a write there may change."""
    deadline = time.monotonic() + COPY_S
    for folder, owner in sorted(markers.items()):
        SnapshotCopy(fs, owner.removeprefix(SNAPSHOT_OWNER), folder).before(path, deadline)
