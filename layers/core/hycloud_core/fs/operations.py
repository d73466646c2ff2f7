"""The filesystem operations of one user, over EFS (namespace), S3 (objects) and DynamoDB (records).

Consistency model (README "Consistency"):
- The namespace on EFS is the source of truth for what a path holds; file records in DynamoDB
  are an index of it, written after it under the same lease and repaired by upkeep.
- Every mutating operation holds subtree leases (store/locks.py) on the paths it changes, so
  operations on the same or related paths never interleave; EFS changes are atomic renames.
- Content is never deleted by an operation. Linking content touches its object record first;
  only the mark-and-sweep collector (store/collector.py) reclaims content, and only what no link
  names. A crash or race can delay reclamation, never lose a file.
- A write may name the version it expects (`expect`): the path's current content hash (sha256 for
  small files), or "" for "must not exist". Without it, the last writer wins.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import replace
from itertools import batched, groupby
from typing import TYPE_CHECKING, Any

from .. import content, paths
from ..errors import BadRequestError, ConflictError, NotFoundError
from ..linkfile import LinkFile
from ..presigned import MAX_URL_TTL_S
from ..store.collector import bump_tree_epoch
from ..store.locks import Lease, path_leases
from ..store.merkle_records import MerkleRecords
from ..store.objects import Objects
from ..store.quotas import Change, Quota
from ..store.records import Records
from ..store.trash_records import TrashItem
from ..store.version_records import VersionRecord
from .history import History
from .namespace import Entry, Namespace, file_mode
from .segments_records import touch_segment
from .trash import Trash
from .tree_walk import POST, PRE, Step, under, walk
from .uploads import Uploads

if TYPE_CHECKING:
    from ..config import InstanceConfig


DOWNLOAD_URL_TTL_S = MAX_URL_TTL_S  # the client asks for the link again when it expired
PAGE = 100  # entries of a tree walk done together (copies and removals of a page run side by side)
SETTLE_INLINE_S = 0.04  # rm -r counts what it trashed for this long at most, then leaves it pending
_POOL = ThreadPoolExecutor(8)
ABSENT = ""  # `expect` value: the path must not exist


def in_parallel[T, R](fn: Callable[[T], R], items: list[T]) -> list[R]:
    """fn over items on a few threads: per-file EFS work waits on the network, not the CPU."""
    return list(_POOL.map(fn, items))


class FileSystem:
    """`retain_s`: how long a version replaced by an overwrite or a delete is kept (fs/history.py;
    0 keeps none). `quota`: the user's counter and limits (the deployment's defaults unless given)."""

    def __init__(
        self,
        user: str,
        ns: Namespace,
        records: Records,
        objects: Objects,
        s3: Any,
        bucket: str,
        retain_s: int = 0,
        quota: Quota | None = None,
    ) -> None:
        self.retain_s = retain_s
        self.quota = quota or Quota(records, user)
        self.quota.on_full = lambda: self.trash.settle_pending() > 0  # rm -r's pending counts first
        self.user, self.ns, self.records, self.objects, self.s3, self.bucket = (
            user,
            ns,
            records,
            objects,
            s3,
            bucket,
        )
        self.uploads = Uploads(user, records, objects, s3, bucket)

    @classmethod
    def deployed(
        cls,
        config: InstanceConfig,
        user: str,
        s3: Any,
        records: Records | None = None,
        quota: Quota | None = None,
    ) -> FileSystem:
        """The user's filesystem as the deployment's settings give it (how every function builds it)."""
        records = records or Records(config.table)
        return cls(
            user,
            Namespace(config.namespaces_dir, user),
            records,
            Objects(records.table, s3, config.bucket),
            s3,
            config.bucket,
            retain_s=config.version_retention_s,
            quota=quota,
        )

    @property
    def merkle(self) -> MerkleRecords:
        """The user's Merkle hashes: every mutation below tells it what changed."""
        return MerkleRecords(self.records.table, self.user)

    @property
    def history(self) -> History:
        """Earlier versions: every overwrite and delete below keeps the version it replaces."""
        return History(self)

    @property
    def trash(self) -> Trash:
        """What `rm` and `rm -r` removed, kept for the trash retention (fs/trash.py)."""
        return Trash(self)

    def _leases(self, *changed: str) -> AbstractContextManager[Lease]:
        return path_leases(self.records.table, self.user, list(changed), on_snapshot=self.before_snapshot)

    def lease(self) -> Lease:
        """A lease for many paths (a bundle's), copying into snapshots being made as `_leases` does."""
        return Lease(self.records.table, self.user, on_snapshot=self.before_snapshot)

    def before_snapshot(self, markers: dict[str, str], path: str) -> None:
        """Copy into the snapshots being made above `path` what a write there changes
        (fs/snapshot_copy.py): the lease is then taken past them."""
        from .snapshot_copy import before_change

        before_change(self, markers, path)

    # --- versions ------------------------------------------------------------------------------
    def versions(self, path: str) -> set[str]:
        """The names of the path's current version: its content hash (for a small file also the
        sha256 of its bytes, as its upload declared it); {ABSENT} when nothing is there."""
        try:
            entry = self.ns.stat(path)
        except NotFoundError:
            return {ABSENT}
        if entry.type == "dir":
            return {"dir"}
        if entry.storage == "large":
            return {entry.content_hash or ""}
        hashed = self.ns.stat_hashed(path)  # a packed file's hashes are in its stub
        return {hashed.content_hash or "", hashed.sha256 or ""}

    def check_expected(self, path: str, expect: str | None) -> None:
        """409 version-mismatch unless `path` holds the version `expect` names (None: any)."""
        if expect is None:
            return
        current = self.versions(path)
        if expect.lower() not in current:
            shown = "absent" if current == {ABSENT} else min(current, key=len)
            raise ConflictError(
                f"{path} is not at the expected version (it is {shown})", code="version-mismatch"
            )

    def readable_versions(self, path: str) -> set[str]:
        """Versions the caller can read through `path`: the current one and retained earlier ones."""
        link = self.ns.current_link(paths.normalize(path))
        return link.readable_versions(time.time()) if link else set()

    # --- files -------------------------------------------------------------------------------
    def put_small(
        self,
        path: str,
        data: bytes,
        sha256: str,
        parents: bool = False,
        expect: str | None = None,
        mtime: float | None = None,
        mode: int | None = None,
    ) -> Entry:
        path = paths.normalize(path)
        with self._leases(path), self.quota.writing(self.ns, path, len(data)):
            self.check_expected(path, expect)
            history, digest = self.history, content.hash_bytes(data)
            kept = history.preserve(path, "overwrite", digest)
            bits = 0o640 if mode is None else file_mode(mode)
            entry = self.ns.write(path, data, parents=parents, mode=bits, mtime=mtime)
            self.records.put_file(self.user, path, kind="small", size=len(data), sha256=sha256)
            self.merkle.file_written(path, digest, entry.mtime)
            history.record(kept)
        return entry

    def commit_large(
        self,
        path: str,
        content_hash: str,
        proof: str | None = None,
        parents: bool = False,
        expect: str | None = None,
        mtime: float | None = None,
        mode: int | None = None,
        sha256: str | None = None,
    ) -> Entry:
        """Finish a client's upload (or dedup claim) and link the content at `path`; `sha256`,
        the plain hash the client computed with the part digests, is kept in the link."""
        path = paths.normalize(path)
        with self._leases(path), self.quota.committing(self.ns, path, content_hash):
            self._require_parent(path, parents)
            self.check_expected(path, expect)
            size = self.uploads.finish(content_hash, proof)
            mode = None if mode is None else mode & 0o777
            return self._link(path, content_hash, size, mtime, mode, sha256=sha256)

    def commit_stored(
        self,
        path: str,
        content_hash: str,
        size: int,
        mtime: float | None = None,
        expect: str | None = None,
        sha256: str | None = None,
        settling: bool = False,
    ) -> Entry:
        """Link content the cloud itself made (a delta upload's result), with the plain sha256 it
        computed while writing it; `settling`: its bytes are on EFS, on their way to S3."""
        path = paths.normalize(path)
        with self._leases(path), self.quota.writing(self.ns, path, size):
            self._require_parent(path, False)
            self.check_expected(path, expect)
            self.objects.create(content_hash, size, settling=settling)
            return self._link(path, content_hash, size, mtime, sha256=sha256, settling=settling)

    def relink(
        self,
        path: str,
        content_hash: str,
        size: int,
        sha256: str | None = None,
        parents: bool = False,
        erasure: dict[str, Any] | None = None,
    ) -> Entry:
        """Link content already stored (a kept version being restored) at `path`: an object (404
        when the collector has reclaimed it) or, with `erasure`, a coded file's blocks (kept by
        the block sweep while a version record names them: coded/sweep.py)."""
        path = paths.normalize(path)
        with self._leases(path), self.quota.writing(self.ns, path, size):
            self._require_parent(path, parents)
            if erasure is None and not self.objects.touch(content_hash):
                raise NotFoundError("this version's content is no longer stored", code="content-gone")
            settling = erasure is None and "settling" in (self.objects.get(content_hash) or {})
            return self._link(path, content_hash, size, sha256=sha256, erasure=erasure, settling=settling)

    def _require_parent(self, path: str, parents: bool) -> None:
        if parents:
            self.ns.mkdir(paths.parent(path), parents=True)
        else:
            self.ns.require_dir(paths.parent(path))

    def check_upload(self, path: str, size: int, parents: bool = False) -> None:
        """Refuse at a large upload's start what its commit would refuse about its destination: a
        parent folder missing (or a file), a folder at the path, a size over the quota. The commit
        checks it all again; this spares a client sending bytes that could never be kept."""
        path = paths.normalize(path)
        if path == "/":
            raise ConflictError("/ is a directory", code="is-a-directory")
        self._check_ancestors(path, parents)
        if self.ns.exists(path) and self.ns.stat(path).type == "dir":
            raise ConflictError(f"{path} is a directory", code="is-a-directory")
        self.quota.check_writing(self.ns, path, size)

    def _check_ancestors(self, path: str, parents: bool) -> None:
        """The parent is a folder; with `parents`, the nearest existing ancestor is one."""
        folder = paths.parent(path)
        while parents and folder != "/" and not self.ns.exists(folder):
            folder = paths.parent(folder)
        self.ns.require_dir(folder)

    def _link(
        self,
        path: str,
        content_hash: str,
        size: int,
        mtime: float | None = None,
        mode: int | None = None,
        erasure: dict[str, Any] | None = None,
        sha256: str | None = None,
        settling: bool = False,
    ) -> Entry:
        """Point `path` at content just touched for it; the version it replaces is kept."""
        now, history = time.time(), self.history
        kept = history.preserve(path, "overwrite", content_hash)
        old = self.ns.current_link(path)
        if old:
            link = old.superseded_by(content_hash, size, mtime or now, self.retain_s, now, mode, sha256)
        else:
            link = LinkFile(
                content_hash=content_hash, size=size, mtime=mtime or now, mode=mode, sha256=sha256
            )
        link.erasure, link.settling = erasure, settling
        entry = self.ns.write_link(path, link)
        self.records.put_file(self.user, path, kind="large", size=size, content_hash=content_hash)
        self.merkle.file_written(path, content_hash, entry.mtime)
        history.record(kept)
        return entry

    def set_chunk_state(
        self, path: str, content_hash: str, chunk_size: int, probabilities: dict[str, Any]
    ) -> Entry:
        """Store the adaptive chunk-size choice in the link file (if it still holds that version)."""
        path = paths.normalize(path)
        with self._leases(path):
            link = self.ns.current_link(path)
            if link is None or link.content_hash != content_hash:
                raise ConflictError(f"{path} changed meanwhile", code="version-changed")
            link.chunk_size, link.chunk_probabilities = chunk_size, probabilities
            return self.ns.write_link(path, link)

    def download_link(self, path: str) -> dict[str, Any]:
        """Where and how to fetch a large file directly from S3."""
        link = self.ns.read_link(paths.normalize(path))
        if link.settling:
            self.objects.await_settled(link.content_hash)
        url = self.s3.generate_presigned_url(
            "get_object",
            ExpiresIn=DOWNLOAD_URL_TTL_S,
            Params={"Bucket": self.bucket, "Key": content.object_key(link.content_hash)},
        )
        return {
            "path": paths.normalize(path),
            "size": link.size,
            "content_hash": link.content_hash,
            "chunk_size": link.chunk_size,
            "chunk_state": link.chunk_probabilities,
            "part_size": content.PART_SIZE,
            "mtime": link.mtime,
            "url": url,
            **({"erasure": link.erasure} if link.erasure else {}),
        }

    def delete(self, path: str, expect: str | None = None) -> TrashItem:
        """Move a file into the trash (fs/trash.py), keeping it as a version too; its content
        stays while either keeps it, then until the collector proves nothing links it."""
        path = paths.normalize(path)
        with self._leases(path), self.quota.removing(self.ns, path):
            entry = self.ns.stat(path)
            if entry.type == "dir":
                raise ConflictError(f"{path} is a directory; use rmdir", code="is-a-directory")
            self.check_expected(path, expect)
            history, trash = self.history, self.trash
            kept = history.preserve(path, "delete")
            item = trash.take(entry, Change(entry.size, 1))
            self.records.delete_file(self.user, path)
            self.merkle.removed(path)
            history.record(kept)
            trash.records.put(item)
            return item

    def remove_file(self, path: str) -> None:
        """Remove a file for good: no trash item, no version (`rmdir(recursive=True)` is the same
        for a folder). A replica's removal: its primary's trash and history come separately."""
        path = paths.normalize(path)
        with self._leases(path), self.quota.removing(self.ns, path):
            if self.ns.stat(path).type == "dir":
                raise ConflictError(f"{path} is a directory; use rmdir", code="is-a-directory")
            self.ns.unlink(path)
            self.records.delete_file(self.user, path)
            self.merkle.removed(path)

    # --- directories ---------------------------------------------------------------------------
    def mkdir(self, path: str, parents: bool = False) -> Entry:
        path = paths.normalize(path)
        if path == "/":
            return self.ns.stat(path)
        with self._leases(path):
            entry = self.ns.mkdir(path, parents=parents)
            self.merkle.dir_made(path)
            return entry

    def trash_tree(self, path: str) -> TrashItem:
        """`rm -r`: move a folder and everything in it into the trash in one EFS rename (fs/trash.py);
        its folder entry follows under the same lease, below the trash's root (one rewrite: the
        records stay keyed by the folder's id, store/dir_index.py), beside the Merkle nodes' (one
        tombstone). What it held is counted after the lease, for SETTLE_INLINE_S at most: a larger
        tree is left `pending`, counted by the next reader that needs it (Trash.settle)."""
        path = paths.normalize(path)
        if path == "/":
            raise ConflictError("cannot remove the root directory", code="is-root")
        with self._leases(path):
            self.ns.require_dir(path)
            trash = self.trash
            item = replace(trash.take(self.ns.stat(path), Change()), pending=True)
            merkle = _POOL.submit(self.merkle.removed, path, trashed=True)  # beside the records' move
            self.records.to_trash(self.user, path, item.item)
            merkle.result()
            trash.records.put(item)
        return trash.settle(item, SETTLE_INLINE_S)

    def rmdir(self, path: str, recursive: bool = False) -> int:
        """Remove a directory (with `recursive`, everything in it, for good: `trash_tree` is what
        the API's removal does); return how many files went."""
        path = paths.normalize(path)
        if path == "/":
            raise ConflictError("cannot remove the root directory", code="is-root")
        with self._leases(path), self.quota.removing_tree(path):
            self.ns.require_dir(path)
            if not recursive:
                self.ns.rmdir(path)
                self.merkle.removed(path)
                return 0
            removed = self._remove_tree(path)
            self.records.rewrite_subtree(self.user, path, None)
            self.merkle.removed(path)
            return removed

    def _remove_tree(self, path: str) -> int:
        pages = batched(walk(self.ns, path, POST), PAGE)
        return sum(len(self.remove_page(path, list(page))) for page in pages)

    # --- move and copy -------------------------------------------------------------------------
    def _check_pair(self, src: str, dst: str) -> tuple[str, str, Entry]:
        src, dst = paths.normalize(src), paths.normalize(dst)
        if "/" in (src, dst):
            raise BadRequestError("cannot move or copy the root directory", code="is-root")
        if src == dst or dst.startswith(src + "/"):
            raise BadRequestError("destination is the source or inside it", code="bad-destination")
        entry = self.ns.stat(src)
        self.ns.require_dir(paths.parent(dst))
        if self.ns.exists(dst):
            target = self.ns.stat(dst)
            if entry.type == "dir" or target.type == "dir":
                raise ConflictError(f"{dst} already exists", code="already-exists")
        return src, dst, entry

    def check_tree_operation(self, op: str, src: str, dst: str | None, expect: str | None) -> None:
        """What move, copy and rmdir refuse, checked by a tree job before it starts (under its leases)."""
        if op == "remove":
            if paths.normalize(src) == "/":
                raise ConflictError("cannot remove the root directory", code="is-root")
            self.ns.require_dir(src)
            return
        self._check_pair(src, dst or "")
        self.check_expected(paths.normalize(dst or ""), expect)

    def _require_content(self, entry: Entry) -> None:
        """Touch a large file's content before a new link to it appears (see store/collector.py).

        A coded file's content is its blocks, which have no object record: the block sweep
        (coded/sweep.py) keeps every block any link file names, so the new link, which names the
        same layout, keeps them as long as it is there, whatever becomes of the source.
        A packed small file's stub moves or is copied as it is: its segment is touched, which
        the cleaner reads as a stub it may not have seen (fs/segments.py)."""
        if entry.storage == "small" and (stub := self.ns.segment_stub(entry.path)):
            touch_segment(self.records.table, self.user, stub.segment)
        if entry.storage != "large" or self.ns.read_link(entry.path).erasure:
            return
        if not self.objects.touch(entry.content_hash or ""):
            raise NotFoundError(f"content of {entry.path} is no longer stored", code="content-gone")

    def move(self, src: str, dst: str, expect: str | None = None) -> Entry:
        with (
            self._leases(paths.normalize(src), paths.normalize(dst)),
            self.quota.removing(self.ns, paths.normalize(dst)),
        ):
            src, dst, entry = self._check_pair(src, dst)
            self.check_expected(dst, expect)
            history = self.history
            kept = self._replacing(history, entry, dst)
            self.rename_tree(entry, dst)
            self.records.rewrite_subtree(self.user, dst, None)
            self.records.rewrite_subtree(self.user, src, dst)
            self.merkle.moved(src, dst)
            history.record(kept)
            return self.ns.stat(dst)

    def copy(self, src: str, dst: str, expect: str | None = None) -> Entry:
        with (
            self._leases(paths.normalize(src), paths.normalize(dst)),
            self.quota.copying(self.ns, paths.normalize(src), paths.normalize(dst)),
        ):
            src, dst, entry = self._check_pair(src, dst)
            self.check_expected(dst, expect)
            history = self.history
            kept = self._replacing(history, entry, dst)
            if entry.type == "dir":
                self._copy_tree(src, dst)
            else:
                self._copy_file(entry, dst)
            self.records.rewrite_subtree(self.user, src, dst, keep_src=True)
            self.merkle.copied(src, dst)
            history.record(kept)
            return self.ns.stat(dst)

    def _replacing(self, history: History, entry: Entry, dst: str) -> VersionRecord | None:
        """Keep the file a move or copy of `entry` replaces at `dst` (unless it brings the same
        content); the source is read for its hash only when there is such a file."""
        if entry.type == "dir" or self.ns.file_entry(dst) is None:
            return None
        incoming = entry.content_hash or self.ns.stat_hashed(entry.path).content_hash
        return history.preserve(dst, "overwrite", incoming)

    def _copy_file(self, entry: Entry, dst: str) -> None:
        """Small files are copied; a large file gets a link file, and no data moves."""
        self._require_content(entry)
        self.ns.copy_file(entry.path, dst)

    def _copy_tree(self, src: str, dst: str) -> None:
        for page in batched(walk(self.ns, src, PRE), PAGE):
            self.copy_page(src, dst, list(page))

    # --- pages of tree walks (also the per-entry work of tree jobs, fs/tree_job.py) --------------
    def copy_page(self, src: str, dst: str, steps: list[Step]) -> list[str]:
        """Copy a page of a pre-order walk of `src` into `dst`; the paths of the files made.

        Folders are made in order; each run of files is copied side by side (EFS is
        latency-bound), each large file's content touched before its link is written.
        """
        made: list[str] = []
        for is_dir, group in groupby(steps, key=lambda step: step.is_dir):
            run = list(group)
            targets = [under(dst, step.rel) for step in run]
            if is_dir:
                for target in targets:
                    self.ns.mkdir(target)
                continue
            entries = in_parallel(self.ns.stat, [under(src, step.rel) for step in run])
            for entry in entries:
                self._require_content(entry)
            pairs = list(zip(entries, targets, strict=True))
            in_parallel(lambda pair: self.ns.copy_file(pair[0].path, pair[1]), pairs)
            made += targets
        return made

    def remove_page(self, root: str, steps: list[Step]) -> list[str]:
        """Remove a page of a post-order walk of `root`; the paths of the files removed.
        What is gone already is skipped, so a page can be done twice."""
        removed: list[str] = []
        for is_dir, run in groupby(steps, key=lambda step: step.is_dir):
            targets = [under(root, step.rel) for step in run]
            if is_dir:
                for target in targets:
                    self._remove_entry(target, is_dir=True)
                continue
            gone = in_parallel(lambda target: self._remove_entry(target, is_dir=False), targets)
            removed += [t for t, went in zip(targets, gone, strict=True) if went]
        return removed

    def _remove_entry(self, path: str, is_dir: bool) -> bool:
        try:
            self.ns.rmdir(path) if is_dir else self.ns.unlink(path)
        except NotFoundError:
            return False
        return True

    def rename_tree(self, entry: Entry, dst: str) -> None:
        """The EFS half of a move: one rename, after telling the collector (see store/collector.py)."""
        if entry.type == "dir":
            bump_tree_epoch(self.records.table)
        else:
            self._require_content(entry)
        self.ns.rename(entry.path, dst)
