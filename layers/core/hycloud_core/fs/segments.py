"""Cold small files packed into S3 segments, and the cleaner that compacts them (docs/SEGMENTS.md).

Packing (BlueSky's log segments, seed 004): a user's small files unused for `pack_after_s` (the
newest of their access, modification and change times) are written, a few MiB at a time, into one
S3 object per batch (fs/segments_format.py), and each file is then replaced on EFS by a stub that
names its range, under the path's lease and only if the file still holds the bytes packed. Names
and folders stay on EFS; reads are ranged GETs (fs/segments_read.py); a write puts the file back
whole, which leaves its bytes in the segment dead.

Cleaning: every pass walks the user's namespace for stubs (the source of truth, as for file
records), writes each segment's live bytes into its record (fs/segments_records.py), and copies
the live members of segments whose live share is under `min_live_share` into new segments,
swapping each stub under its lease only if it still names the old member, so a file rewritten
meanwhile keeps its new bytes. The old segment is retired; its object is deleted only by a later
pass, at least `grace_s` after retirement (a reader holding an old stub still succeeds), whose
complete walk found no stub naming it and which began after its last touch (a stub copied or
moved while a walk runs may be missed by it: fs/operations.py touches the segment, and a folder
move bumps the tree epoch). A stub found naming a retired segment is copied out again.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import stat as stat_mod
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from .. import constants as c
from ..linkfile import LINK_MODE, is_link_mode
from ..store.collector import trash_root, tree_epoch
from ..store.locks import WAIT_S, Lease, passing
from .namespace import TMP_PREFIX, Namespace
from .segments_format import Stub, build_segment, new_segment_id, segment_key, stub_from_bytes
from .segments_records import PACKING, RETIRED, SEALED, SegmentRecord, SegmentRecords, mark_packed

SEGMENT_BYTES = 4 * c.MiB  # one segment object: few PUTs and GETs, little dead space to clean
# Which files pay for packing (docs/SEGMENTS.md, "What pays"): EFS meters a file of one 4 KiB block
# as much as its stub, so smaller ones stay; from 128 KiB EFS's lifecycle moves a file to
# Infrequent Access ($0.016/GB-month), cheaper than S3 Standard ($0.023), so larger ones stay too.
MIN_FILE_BYTES = 4 * c.KiB + 1
MAX_FILE_BYTES = 128 * c.KiB - 1
MIN_LIVE_SHARE = 0.5
PACKING_STALE_S = 900  # a pack runs in one upkeep invocation (timeout 300 s): older is a crashed one
MAX_PACK_FILES = 20_000  # per user and pass, so a pass ends within the function's time

ENV_AFTER_S, ENV_MIN_LIVE, ENV_BYTES = (
    "HYCLOUD_SEGMENT_AFTER_S",
    "HYCLOUD_SEGMENT_MIN_LIVE",
    "HYCLOUD_SEGMENT_BYTES",
)


@dataclass(frozen=True)
class Settings:
    """`pack_after_s` None: packing off (the cleaner still runs); 0 packs every small file."""

    pack_after_s: int | None = None
    min_live_share: float = MIN_LIVE_SHARE
    segment_bytes: int = SEGMENT_BYTES
    grace_s: int = 3600
    min_file_bytes: int = MIN_FILE_BYTES
    max_file_bytes: int = MAX_FILE_BYTES

    @classmethod
    def from_env(cls, grace_s: int, overrides: dict[str, Any] | None = None) -> Settings:
        """The deployment's settings (CDK context, docs/SEGMENTS.md), then an event's overrides."""
        o = overrides or {}
        return cls(
            pack_after_s=_optional_int(o.get("pack_after_s", os.environ.get(ENV_AFTER_S))),
            min_live_share=float(o.get("min_live_share", os.environ.get(ENV_MIN_LIVE) or MIN_LIVE_SHARE)),
            segment_bytes=int(o.get("segment_bytes", os.environ.get(ENV_BYTES) or SEGMENT_BYTES)),
            grace_s=max(0, int(o.get("grace_s", grace_s))),
            min_file_bytes=int(o.get("min_file_bytes", MIN_FILE_BYTES)),
            max_file_bytes=int(o.get("max_file_bytes", MAX_FILE_BYTES)),
        )


def _optional_int(value: Any) -> int | None:
    return None if value in (None, "", "none") else max(0, int(value))


@dataclass
class Pass:
    """What one pass did for one user (the upkeep's answer)."""

    packed_files: int = 0
    packed_bytes: int = 0
    skipped_changed: int = 0  # files changed or busy between being read and being swapped
    segments_written: list[str] = field(default_factory=list)
    compacted: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    live: dict[str, float] = field(default_factory=dict)  # segment id -> live share after the pass

    def merge(self, other: Pass) -> None:
        self.packed_files += other.packed_files
        self.packed_bytes += other.packed_bytes
        self.skipped_changed += other.skipped_changed
        self.segments_written += other.segments_written
        self.compacted += other.compacted
        self.deleted += other.deleted
        self.live |= other.live

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Item:
    """A file to put into a new segment: its bytes and the check, made under its lease, that the
    path still holds what was read (it returns the mode and mtime the stub keeps, or None)."""

    path: str
    data: bytes
    still: Callable[[], tuple[int, float] | None]


def _batches(items: Iterable[Item], limit: int) -> Iterator[list[Item]]:
    """Items read lazily, a segment's worth at a time: memory holds one batch, not a pass."""
    batch: list[Item] = []
    size = 0
    for item in items:
        if batch and size + len(item.data) > limit:
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += len(item.data)
    if batch:
        yield batch


class UserSegments:
    """One user's packing and cleaning over its namespace, its segment records and the bucket."""

    def __init__(self, table: Any, s3: Any, bucket: str, namespaces_dir: str, user: str) -> None:
        self.table, self.s3, self.bucket, self.user = table, s3, bucket, user
        self.namespaces_dir = namespaces_dir
        # a deleted user's segments are only cleaned (none is live): its namespace is not made again
        self.gone = not os.path.isdir(os.path.join(namespaces_dir, user))
        self.records = SegmentRecords(table, user)

    @functools.cached_property
    def ns(self) -> Namespace:
        """Made on first use, never for a user whose namespace is gone (`gone`)."""
        return Namespace(self.namespaces_dir, self.user)

    # --- writing segments ------------------------------------------------------------------------
    def _write(self, items: Iterable[Item], settings: Settings, out: Pass) -> tuple[dict[str, int], int]:
        """Put the items into new segments and swap in their stubs; live bytes per new segment
        and how many files were swapped."""
        live: dict[str, int] = {}
        files = 0
        for batch in _batches(items, settings.segment_bytes):
            segment_id = new_segment_id()
            key = segment_key(self.user, segment_id)
            body, members = build_segment([(i.path, i.data) for i in batch])
            data_bytes = sum(m.length for m in members)  # what live shares are of (not the index)
            self.records.create(segment_id, key, data_bytes, len(members))  # before the object: no orphan
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=body)
            stubs = {
                i.path: Stub(segment_id, key, m.offset, m.length, m.content_hash, m.sha256)
                for i, m in zip(batch, members, strict=True)
            }
            swapped = self._swap(batch, stubs, out)
            live[segment_id] = sum(stubs[p].length for p in swapped)
            files += len(swapped)
            self.records.set_live(segment_id, live[segment_id], state=SEALED)
            out.segments_written.append(segment_id)
        return live, files

    def _swap(self, batch: list[Item], stubs: dict[str, Stub], out: Pass) -> list[str]:
        """Replace each file by its stub, under its lease, if it still holds what was packed."""
        lease = Lease(self.table, self.user, on_snapshot=passing)  # the same bytes, as a stub
        busy = lease.acquire_all([i.path for i in batch], WAIT_S)
        swapped = []
        try:
            for item in batch:
                kept = None if item.path in busy else item.still()
                if kept is None:
                    out.skipped_changed += 1
                    continue
                mode, mtime = kept
                stub = dataclasses.replace(stubs[item.path], mode=mode)
                self.ns.write(item.path, stub.to_bytes(), mode=LINK_MODE, mtime=mtime)
                mark_packed(self.table, self.user, item.path, stub.segment, stub.offset)
                swapped.append(item.path)
        finally:
            lease.release()
        return swapped

    # --- packing ---------------------------------------------------------------------------------
    def cold_files(
        self, cutoff: float, sizes: tuple[int, int], limit: int = MAX_PACK_FILES
    ) -> Iterator[tuple[str, os.stat_result]]:
        """Plain small files (not stubs, links or temporaries) of `sizes` (least, most) last used
        before `cutoff`."""
        found = 0
        for top, dirs, files in os.walk(self.ns.root):
            dirs.sort()
            rel = os.path.relpath(top, self.ns.root)
            base = "" if rel == "." else "/" + rel.replace(os.sep, "/")
            for name in sorted(files):
                if name.startswith(TMP_PREFIX):
                    continue
                try:
                    st = os.lstat(os.path.join(top, name))
                except FileNotFoundError:
                    continue
                if not stat_mod.S_ISREG(st.st_mode) or is_link_mode(st.st_mode):
                    continue
                if not sizes[0] <= st.st_size <= sizes[1]:
                    continue
                if max(st.st_atime, st.st_mtime, st.st_ctime) < cutoff:
                    yield f"{base}/{name}", st
                    found += 1
                    if found >= limit:
                        return

    def _unchanged(self, path: str, sha256: str) -> Callable[[], tuple[int, float] | None]:
        def still() -> tuple[int, float] | None:
            try:
                st = os.lstat(self.ns.host(path))
                if not stat_mod.S_ISREG(st.st_mode) or is_link_mode(st.st_mode):
                    return None
                with open(self.ns.host(path), "rb") as f:
                    same = hashlib.sha256(f.read()).hexdigest() == sha256
            except OSError:
                return None
            return (st.st_mode & 0o777, st.st_mtime) if same else None

        return still

    def _cold_items(self, settings: Settings, now: float) -> Iterator[Item]:
        sizes = (max(1, settings.min_file_bytes), settings.max_file_bytes)
        for path, _st in self.cold_files(now - (settings.pack_after_s or 0), sizes):
            try:
                with open(self.ns.host(path), "rb") as f:
                    data = f.read()
            except OSError:
                continue
            yield Item(path, data, self._unchanged(path, hashlib.sha256(data).hexdigest()))

    def pack(self, settings: Settings, now: float, out: Pass) -> None:
        if settings.pack_after_s is None or self.gone:
            return
        live, files = self._write(self._cold_items(settings, now), settings, out)
        out.packed_files += files
        out.packed_bytes += sum(live.values())
        out.live |= {s: 1.0 if n else 0.0 for s, n in live.items()}

    # --- cleaning --------------------------------------------------------------------------------
    def stubs(self) -> dict[str, list[tuple[str, Stub]]]:
        """Every stub in the namespace, by the segment it names."""
        found: dict[str, list[tuple[str, Stub]]] = defaultdict(list)
        if self.gone:
            return found
        for top, _dirs, files in os.walk(self.ns.root):
            rel = os.path.relpath(top, self.ns.root)
            base = "" if rel == "." else "/" + rel.replace(os.sep, "/")
            for name in files:
                if name.startswith(TMP_PREFIX):
                    continue
                stub = self.ns.segment_stub(f"{base}/{name}")
                if stub is not None:
                    found[stub.segment].append((f"{base}/{name}", stub))
        return found

    def trashed(self) -> set[str]:
        """Segments a stub in the user's trash names (fs/trash.py): never deleted while it is there,
        since a restore puts the stub back as it is. Not copied out either: only a namespace's
        stubs are swapped, so such a segment, once retired, stays until the item is purged."""
        found: set[str] = set()
        for top, _dirs, files in os.walk(os.path.join(trash_root(self.namespaces_dir), self.user)):
            for name in files:
                host = os.path.join(top, name)
                try:
                    if not is_link_mode(os.lstat(host).st_mode):
                        continue
                    with open(host, "rb") as f:
                        stub = stub_from_bytes(f.read())
                except OSError:
                    continue
                if stub is not None:
                    found.add(stub.segment)
        return found

    def clean(self, settings: Settings, now: float, out: Pass) -> None:
        start = time.time()
        epoch = tree_epoch(self.table)
        records = self.records.all()  # read before the walk: a segment made during it is not judged
        found = self.stubs()
        trashed = self.trashed()
        complete = tree_epoch(self.table) == epoch
        to_compact: list[tuple[SegmentRecord, list[tuple[str, Stub]]]] = []
        for record in records:
            named = found.get(record.id, [])
            live = sum({s.offset: s.length for _p, s in named}.values())
            if record.state == PACKING and now - record.created < PACKING_STALE_S:
                continue  # a pack running now
            if record.state == RETIRED:
                if named:  # stubs a walk missed before: copy them out again
                    to_compact.append((record, named))
                elif (
                    complete
                    and record.id not in trashed
                    and record.touched < start
                    and now - record.retired_at >= settings.grace_s
                ):
                    self._delete(record, out)
                continue
            if (live, record.state) != (record.live_bytes, SEALED):
                self.records.set_live(record.id, live, state=SEALED)
            share = live / record.total_bytes if record.total_bytes else 0.0
            out.live[record.id] = share
            if share < settings.min_live_share:
                to_compact.append((record, named))
        if to_compact:
            self._compact(to_compact, settings, now, out)

    def _compact(
        self,
        chosen: list[tuple[SegmentRecord, list[tuple[str, Stub]]]],
        settings: Settings,
        now: float,
        out: Pass,
    ) -> None:
        live, _files = self._write(self._live_items(chosen), settings, out)
        for segment_id, n in live.items():
            out.live[segment_id] = 1.0 if n else 0.0
        for record, _named in chosen:
            self.records.retire(record.id, now)
            out.live.pop(record.id, None)
            out.compacted.append(record.id)

    def _live_items(self, chosen: list[tuple[SegmentRecord, list[tuple[str, Stub]]]]) -> Iterator[Item]:
        """The live members of the chosen segments, one segment's object read at a time."""
        for record, named in chosen:
            body = self._segment_bytes(record) if named else b""
            if body is None:
                continue  # deleted meanwhile by another pass: those stubs were swapped already
            for path, stub in named:
                yield Item(path, body[stub.offset : stub.offset + stub.length], self._still_names(path, stub))

    def _still_names(self, path: str, old: Stub) -> Callable[[], tuple[int, float] | None]:
        def still() -> tuple[int, float] | None:
            current = self.ns.segment_stub(path)
            if current != old:
                return None  # rewritten, moved away or repacked meanwhile: its bytes are not ours
            return old.mode, os.lstat(self.ns.host(path)).st_mtime

        return still

    def _segment_bytes(self, record: SegmentRecord) -> bytes | None:
        try:
            body: bytes = self.s3.get_object(Bucket=self.bucket, Key=record.key)["Body"].read()
            return body
        except self.s3.exceptions.NoSuchKey:
            return None

    def _delete(self, record: SegmentRecord, out: Pass) -> None:
        self.s3.delete_object(Bucket=self.bucket, Key=record.key)  # the object first: no orphan
        self.records.delete(record.id)
        out.deleted.append(record.id)


def users_with_segments(s3: Any, bucket: str) -> set[str]:
    """Users whose prefix holds segments (a deleted user's are cleaned too: none of them is live)."""
    users: set[str] = set()
    for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix="segments/", Delimiter="/"
    ):
        users |= {p["Prefix"].split("/")[1] for p in page.get("CommonPrefixes", [])}
    return users


def run(
    table: Any,
    s3: Any,
    bucket: str,
    namespaces_dir: str,
    settings: Settings,
    users: list[str] | None = None,
    pack: bool = True,
    clean: bool = True,
    now: float | None = None,
) -> Pass:
    """One upkeep pass over `users` (default: every namespace and every user with segments)."""
    if users is None:
        on_efs = (
            {u for u in os.listdir(namespaces_dir) if os.path.isdir(os.path.join(namespaces_dir, u))}
            if os.path.isdir(namespaces_dir)
            else set()
        )
        users = sorted(on_efs | (users_with_segments(s3, bucket) if clean else set()))
    total = Pass()
    for user in users:
        one = UserSegments(table, s3, bucket, namespaces_dir, user)
        if pack:
            one.pack(settings, time.time() if now is None else now, total)
        if clean:
            one.clean(settings, time.time() if now is None else now, total)
    return total
