"""Files on the wrong side of the small-file threshold move between EFS and S3 in the background.

Where a file lives is decided when it is written: up to the deployment's threshold its bytes go to
EFS, above it to S3 behind a link file. A file ends on the wrong side when the threshold changes
(the one chosen by cost for the deployment or the user: cost/thresholds.py, or the configured
`hycloud:smallFileThreshold`) or when
something wrote it past the client's choice (a delta job's result, a restored version). The
upkeep walks each namespace and moves what crosses, a bounded number of files and bytes per pass
(`MoveSettings`); a pass that stops early leaves a cursor (`MOVES#<user>`) and the next one goes
on after it, so a large namespace is done over a few passes and a crash redoes at most one file.

A move changes where the bytes are, nothing the user sees: the content hash is defined the same
way on both sides (`content.py`), the bytes are checked against it before the new copy replaces
the old, the file keeps its modification time and mode, its path (so its share links and kept
versions, both keyed by path, stay), and no version is added (the content is the same). The file
record changes kind. Each file is moved under its path's lease and only if the path still holds
what was judged; a file written meanwhile is left to the next pass. A file changed less than
`settle_s` ago is left too: it may still be being worked on, and moving it twice costs twice.
Coded files (blocks, not one object) and packed small files below the threshold are not moved.
"""

from __future__ import annotations

import hashlib
import os
import stat as stat_mod
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from .. import content
from ..errors import ConflictError, NotFoundError
from ..linkfile import LinkFile, is_link_mode
from ..store.locks import passing, path_leases
from ..store.multipart import ObjectWriter
from ..store.objects import Objects
from ..store.records import Records
from .namespace import TMP_PREFIX, Entry, Namespace, file_mode

MAX_FILES = 1000  # per pass (all users): a pass ends well within the upkeep's 300 s
MAX_BYTES = 2 << 30
SETTLE_S = 86400
LEASE_WAIT_S = 1.0  # a busy file is left to the next pass rather than waited for

TO_S3, TO_EFS = "s3", "efs"


@dataclass(frozen=True)
class MoveSettings:
    """`threshold`: files of at most this many bytes belong in EFS (the controller's own rule)."""

    threshold: int
    max_files: int = MAX_FILES
    max_bytes: int = MAX_BYTES
    settle_s: int = SETTLE_S

    @classmethod
    def from_event(cls, threshold: int, overrides: dict[str, Any] | None = None) -> MoveSettings:
        o = overrides or {}
        return cls(
            threshold=max(0, int(o.get("threshold", threshold))),
            max_files=max(0, int(o.get("max_files", MAX_FILES))),
            max_bytes=max(0, int(o.get("max_bytes", MAX_BYTES))),
            settle_s=max(0, int(o.get("settle_s", SETTLE_S))),
        )


@dataclass
class Moves:
    """What one pass did (the upkeep's answer)."""

    to_s3: int = 0
    to_efs: int = 0
    moved_bytes: int = 0
    skipped: int = 0  # busy, changed meanwhile, or content being reclaimed: the next pass retries
    unfinished: int = 0  # users whose walk stopped at the bound (a cursor is kept)

    def to_dict(self) -> dict[str, int]:
        return dict(vars(self))


def side_for(size: int, threshold: int) -> str:
    return TO_EFS if size <= threshold else TO_S3


def _components(path: str) -> tuple[str, ...]:
    return tuple(p for p in path.split("/") if p)


class Cursor:
    """Where a user's last unfinished pass stopped (the path it judged last)."""

    def __init__(self, table: Any, user: str) -> None:
        self.table, self.key = table, {"pk": f"MOVES#{user}", "sk": "cursor"}

    def get(self) -> str | None:
        item = self.table.get_item(Key=self.key, ConsistentRead=True).get("Item")
        return str(item["after"]) if item else None

    def set(self, after: str | None) -> None:
        if after is None:
            self.table.delete_item(Key=self.key)
        else:
            self.table.put_item(Item={**self.key, "after": after, "at": int(time.time())})


def files_after(root: str, after: str | None) -> Iterator[tuple[str, os.stat_result]]:
    """Regular files below `root` in walk order (names sorted, files and folders together, depth
    first), those after `after` only; folders wholly before it are not entered."""
    yield from _walk(root, (), _components(after) if after else ())


def _walk(top: str, base: tuple[str, ...], mark: tuple[str, ...]) -> Iterator[tuple[str, os.stat_result]]:
    try:
        with os.scandir(top) as it:
            entries = sorted(it, key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return  # removed meanwhile
    for e in entries:
        here = (*base, e.name)
        if e.name.startswith(TMP_PREFIX) or here < mark[: len(here)]:
            continue  # a temporary, or wholly before the cursor
        try:
            st = e.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat_mod.S_ISDIR(st.st_mode):
            yield from _walk(e.path, here, mark)
        elif stat_mod.S_ISREG(st.st_mode) and here > mark:
            yield "/" + "/".join(here), st


class UserMoves:
    """One user's files moved across the threshold."""

    def __init__(self, records: Records, objects: Objects, ns: Namespace, user: str) -> None:
        self.records, self.objects, self.ns, self.user = records, objects, ns, user

    def wrong_side(self, path: str, threshold: int) -> str | None:
        """Where the file at `path` should go, or None where it is right (or is a coded file)."""
        entry = self.ns.stat(path)
        if entry.type != "file":
            return None
        want = side_for(entry.size, threshold)
        if entry.storage == "small" and want == TO_S3:
            return TO_S3
        if entry.storage == "large" and want == TO_EFS and not self.ns.read_link(path).erasure:
            return TO_EFS
        return None

    def move(self, path: str, threshold: int) -> int:
        """Move the file if it still crosses, under its lease; the bytes moved (0: nothing done).
        Raises ConflictError when the path is busy or its content is being reclaimed."""
        with path_leases(self.records.table, self.user, [path], wait_s=LEASE_WAIT_S, on_snapshot=passing):
            try:
                side = self.wrong_side(path, threshold)
            except NotFoundError:
                return 0
            if side == TO_S3:
                return self._to_s3(self.ns.stat(path))
            if side == TO_EFS:
                return self._to_efs(path)
            return 0

    def _to_s3(self, entry: Entry) -> int:
        data = self.ns.read(entry.path)  # a packed file's bytes come from its segment
        digest = content.hash_bytes(data)
        if not self.objects.is_stored(digest):
            writer = ObjectWriter(self.objects.s3, self.objects.bucket, content.object_key(digest))
            writer.write(data)
            writer.complete()
        self.objects.create(digest, len(data))  # touched before the link appears (collector)
        link = LinkFile(
            content_hash=digest,
            size=len(data),
            mtime=entry.mtime,
            mode=entry.mode,
            sha256=hashlib.sha256(data).hexdigest(),
        )
        self.ns.write_link(entry.path, link)
        self.records.put_file(self.user, entry.path, kind="large", size=len(data), content_hash=digest)
        return len(data)

    def _to_efs(self, path: str) -> int:
        link = self.ns.read_link(path)
        if link.settling:
            self.objects.await_settled(link.content_hash)
        got = self.objects.s3.get_object(
            Bucket=self.objects.bucket, Key=content.object_key(link.content_hash)
        )
        data = got["Body"].read()
        sha256 = hashlib.sha256(data).hexdigest()
        if content.hash_bytes(data) != link.content_hash or (link.sha256 and link.sha256 != sha256):
            raise ConflictError(
                f"{path}: the stored object does not hold its content", code="content-mismatch"
            )
        mode = 0o640 if link.mode is None else file_mode(link.mode)
        self.ns.write(path, data, mode=mode, mtime=link.mtime)
        self.records.put_file(self.user, path, kind="small", size=len(data), sha256=sha256)
        return len(data)


def _users(namespaces_dir: str) -> list[str]:
    if not os.path.isdir(namespaces_dir):
        return []
    return sorted(u for u in os.listdir(namespaces_dir) if os.path.isdir(os.path.join(namespaces_dir, u)))


def _settled(st: os.stat_result, now: float, settle_s: int) -> bool:
    return max(st.st_mtime, st.st_ctime) <= now - settle_s


def _candidate(st: os.stat_result, threshold: int) -> bool:
    """Worth a look: a link or stub (its size is inside it) or a plain file above the threshold."""
    return is_link_mode(st.st_mode) or st.st_size > threshold


def run(
    records: Records,
    objects: Objects,
    namespaces_dir: str,
    settings: MoveSettings,
    users: list[str] | None = None,
    now: float | None = None,
    threshold_of: Callable[[str], int] | None = None,
) -> Moves:
    """One bounded pass over `users` (default: every namespace), each resumed at its cursor;
    `threshold_of` gives a user's threshold where it is not `settings.threshold` (their own)."""
    pass_ = _Pass(settings, time.time() if now is None else now, threshold_of)
    for user in _users(namespaces_dir) if users is None else users:
        if pass_.spent():
            break
        if os.path.isdir(os.path.join(namespaces_dir, user)):
            pass_.user(records, objects, Namespace(namespaces_dir, user), user)
    return pass_.done


class _Pass:
    """The budget of one pass, shared by its users."""

    def __init__(
        self, settings: MoveSettings, now: float, threshold_of: Callable[[str], int] | None = None
    ) -> None:
        self.settings, self.now = settings, now
        self.threshold_of = threshold_of or (lambda _user: settings.threshold)
        self.done, self.files = Moves(), 0

    def spent(self) -> bool:
        return self.files >= self.settings.max_files or self.done.moved_bytes >= self.settings.max_bytes

    def user(self, records: Records, objects: Objects, ns: Namespace, user: str) -> None:
        """Walk one user's files from its cursor until the end (the cursor goes) or the bound."""
        cursor = Cursor(records.table, user)
        after = cursor.get()
        one, last = UserMoves(records, objects, ns, user), after
        threshold = self.threshold_of(user)
        for path, st in files_after(ns.root, after):
            if self.spent():
                cursor.set(last)
                self.done.unfinished += 1
                return
            last = path
            if _candidate(st, threshold) and _settled(st, self.now, self.settings.settle_s):
                self._one(one, path, threshold)
        if after is not None:
            cursor.set(None)  # the walk reached the end: the next pass starts from the top

    def _one(self, one: UserMoves, path: str, threshold: int) -> None:
        try:
            side = one.wrong_side(path, threshold)
            moved = one.move(path, threshold) if side else 0
        except (
            ConflictError,
            NotFoundError,
            ValueError,
            ClientError,
        ):  # busy, changed, S3 refused: next pass
            self.done.skipped += 1
            return
        if moved:
            self.files += 1
            self.done.moved_bytes += moved
            self.done.to_s3 += side == TO_S3
            self.done.to_efs += side == TO_EFS
