"""Version history: the version an overwrite or a delete replaces is kept, listed and restorable.

Keeping happens in two steps around the change, both under the path's lease. `preserve`, before
the namespace changes, makes the old content safe: a small file's bytes are linked into the
versions area (fs/version_copies.py), a large file's object gets `keep_until` (objects.py), which
a collection round already running honours. `record`, once the change is done, writes the
version record (store/version_records.py). A change that fails leaves no record, only a copy
that upkeep drops after the grace period; a crash between the change and the record loses the
entry in the history, never content anything else names.

Versions live for the deployment's retention (`InstanceConfig.version_retention_s`); 0 keeps none.
"""

from __future__ import annotations

import hashlib
import os
import time
from typing import TYPE_CHECKING

from .. import content, paths
from ..errors import NotFoundError
from ..store.version_records import VersionRecord, VersionRecords, new_version_id
from .namespace import Entry
from .version_copies import VersionCopies

if TYPE_CHECKING:
    from .operations import FileSystem


class History:
    """The earlier versions of one user's files."""

    def __init__(self, fs: FileSystem) -> None:
        self.fs = fs
        self.records = VersionRecords(fs.records.table, fs.user)
        self.copies = VersionCopies(os.path.dirname(fs.ns.root), fs.user)

    def preserve(self, path: str, reason: str, new_hash: str | None = None) -> VersionRecord | None:
        """Make the file at `path` safe before it is replaced or deleted; the record to write after.
        None when nothing is kept: no file there, the same content coming back, or no retention."""
        retain_s, entry = self.fs.retain_s, self.fs.ns.file_entry(path)
        if retain_s <= 0 or entry is None:
            return None
        now = time.time()
        if entry.storage == "large":
            link = self.fs.ns.read_link(path)
            if link.content_hash == new_hash:
                return None
            self.fs.objects.retain(link.content_hash, retain_s)
            digest, size, sha256, erasure = link.content_hash, link.size, link.sha256, link.erasure
        else:
            data = self.fs.ns.read(path)
            digest, size, sha256, erasure = content.hash_bytes(data), len(data), None, None
            if digest == new_hash:
                return None
            if self.fs.ns.segment_stub(path):  # packed: keep its bytes, not a link to its stub
                self.copies.keep_bytes(data, digest)
            else:
                self.copies.keep(self.fs.ns.host(path), digest)
            sha256 = hashlib.sha256(data).hexdigest()
        return VersionRecord(
            path=path,
            version=new_version_id(now),
            kind=entry.storage or "small",
            content_hash=digest,
            size=size,
            mtime=entry.mtime,
            by=self.fs.user,
            at=now,
            reason=reason,
            expires=now + retain_s,
            sha256=sha256,
            erasure=erasure,
        )

    def record(self, kept: VersionRecord | None) -> None:
        if kept is not None:
            self.records.put(kept)

    def listing(self, path: str) -> list[VersionRecord]:
        """The path's kept versions, newest first; 404 when it neither exists nor has any."""
        path = paths.normalize(path)
        found = self.records.of_path(path)
        if not found and not self.fs.ns.exists(path):
            raise NotFoundError(f"{path} does not exist and has no kept versions")
        return found

    def find(self, path: str, version: str | None) -> VersionRecord:
        """The version asked for (the newest when None), or 404."""
        path = paths.normalize(path)
        if version is None:
            found = self.records.of_path(path)
            if not found:
                raise NotFoundError(f"{path} has no kept versions", code="version-not-found")
            return found[0]
        record = self.records.get(path, version)
        if record is None or record.expires <= time.time():
            raise NotFoundError(f"{path} has no version {version}", code="version-not-found")
        return record

    def restore(
        self, path: str, version: str | None = None, to: str | None = None
    ) -> tuple[Entry, VersionRecord]:
        """Write a kept version back at `path` (or at `to`) as a new write: what it replaces there
        is kept in turn, so a restore loses nothing. The file gets the time of the restore; folders
        removed since are made again."""
        record = self.find(path, version)
        dst = paths.normalize(to or path)
        if record.kind == "large":
            entry = self.fs.relink(
                dst, record.content_hash, record.size, record.sha256, parents=True, erasure=record.erasure
            )
            return entry, record
        data = self.copies.read(record.content_hash)
        return self.fs.put_small(dst, data, hashlib.sha256(data).hexdigest(), parents=True), record
