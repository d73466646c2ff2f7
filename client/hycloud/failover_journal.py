"""The changes the primary acknowledged that the standby may not have yet, kept to be replayed
on the standby when the client fails over (docs/FAILOVER.md).

The journal is a SQLite file beside the client's state (`failover-journal.sqlite3` next to
state.sqlite3), one per machine, its rows scoped to (primary endpoint, key): a change is committed
to it (WAL, synchronous=FULL) before the acknowledgement reaches the caller, so a later run (a
later `hycloud` command, or one after the process was killed) that finds the primary unreachable
replays it. Entries are removed once replayed, and whenever the client learns that the standby is
in step past them: it holds everything acknowledged before its `in_step_at` (GET
/v1/replication, the start of a completed replication pass), less a margin for clock skew.

Requests whose body is held in memory are replayed as sent. A large file's upload (its parts went
to the primary's bucket) is journaled by the SDK once committed (`record_upload`: the local file,
the path, the content hash) and replayed as a new upload to the standby, which finds the content
already there when the record stream has copied it (a dedup claim, no bytes sent). Other changes
are reported in `unreplayable` for the caller to send again.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hycloud_core import content
from hycloud_core.merkle.hashing import file_hash

CLOCK_MARGIN_S = 60.0  # the standby's clock may be this far from ours
MAX_BYTES = 256 * 1024 * 1024  # beyond this the oldest entries go (and `overflowed` says so)
FILE_NAME = "failover-journal.sqlite3"
REPLAYED = frozenset(
    {
        ("PUT", "/v1/files"),
        ("POST", "/v1/bundles"),  # small files many to a request (put -r): each file commits again
        ("POST", "/v1/dirs"),
        ("DELETE", "/v1/files"),
        ("DELETE", "/v1/dirs"),
        ("POST", "/v1/move"),
        ("POST", "/v1/copy"),
    }
)
UPLOAD = "UPLOAD"  # Change.method of a large upload journaled by the SDK (record_upload)
PREPARING = frozenset({("POST", "/v1/uploads"), ("POST", "/v1/uploads/urls"), ("POST", "/v1/uploads/commit")})

SCHEMA = """
CREATE TABLE IF NOT EXISTS changes (
    id INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT, at REAL, method TEXT, route TEXT,
    kwargs TEXT, data BLOB, size INTEGER);
CREATE INDEX IF NOT EXISTS changes_scope ON changes (scope, at);
CREATE TABLE IF NOT EXISTS unreplayable (id INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT, at REAL, what TEXT);
CREATE TABLE IF NOT EXISTS overflowed (scope TEXT PRIMARY KEY);
"""


def journal_path() -> Path:
    """Beside the client's state file (versions.py: $HYCLOUD_STATE, else beside the config)."""
    from .versions import state_path

    return state_path().parent / FILE_NAME


def scope_of(endpoint: str, api_key: str) -> str:
    """Rows of one deployment and key: another profile's changes are not ours to replay."""
    return f"{endpoint.rstrip('/')} {hashlib.sha256(api_key.encode()).hexdigest()[:16]}"


@dataclass
class Change:
    at: float
    method: str
    route: str
    kwargs: dict[str, Any]
    id: int | None = None  # its row in the journal

    @property
    def size(self) -> int:
        data = self.kwargs.get("data")
        return len(data) if isinstance(data, bytes | bytearray) else 0

    def expected_leaf(self) -> tuple[str, str] | None:
        """(path, hex Merkle hash) a small-file write leaves, to check the standby by."""
        if (self.method, self.route) != ("PUT", "/v1/files") or not self.size:
            return None
        path = self.kwargs["params"]["path"]
        digest = bytes.fromhex(content.hash_bytes(bytes(self.kwargs["data"])))
        return path, file_hash(digest).hex()


def _storable(kwargs: dict[str, Any]) -> tuple[str, bytes | None] | None:
    """(JSON of the request's arguments, its body) or None when the body cannot be kept (a stream)."""
    rest = {k: v for k, v in kwargs.items() if k != "data"}
    data = kwargs.get("data")
    if data is not None and not isinstance(data, bytes | bytearray):
        return None
    try:
        return json.dumps(rest), None if data is None else bytes(data)
    except TypeError:
        return None


class Journal:
    """The journal of one (endpoint, key); `path` None keeps it in memory only (tests)."""

    def __init__(self, path: Path | str | None = None, scope: str = "") -> None:
        self.scope = scope
        self._lock = threading.Lock()
        self.db = self._open(path)

    @staticmethod
    def _open(path: Path | str | None) -> sqlite3.Connection:
        """The journal's database; a place we cannot write to leaves a journal of this run only."""
        if path is not None:
            try:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(str(path), timeout=30, check_same_thread=False, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                # committed means on disk: journaled before it is acknowledged to the caller
                db.execute("PRAGMA synchronous=FULL")
                db.executescript(SCHEMA)
                return db
            except (OSError, sqlite3.Error):
                pass
        db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        db.executescript(SCHEMA)
        return db

    def _write(self, sql: str, args: tuple = ()) -> None:
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.execute(sql, args)
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    # --- what is kept ---------------------------------------------------------------------------
    @property
    def changes(self) -> list[Change]:
        return self.take()

    @property
    def unreplayable(self) -> list[tuple[float, str]]:
        with self._lock:
            rows = self.db.execute(
                "SELECT at, what FROM unreplayable WHERE scope = ? ORDER BY id", (self.scope,)
            ).fetchall()
        return [(at, what) for at, what in rows]

    @property
    def overflowed(self) -> bool:
        with self._lock:
            return bool(self.db.execute("SELECT 1 FROM overflowed WHERE scope = ?", (self.scope,)).fetchone())

    # --- recording ------------------------------------------------------------------------------
    def record(self, method: str, route: str, kwargs: dict[str, Any]) -> None:
        """A change the primary acknowledged: on disk when this returns."""
        if (method, route) in PREPARING:
            return  # a large upload's steps: the SDK journals the upload whole once committed
        stored = _storable(kwargs) if (method, route) in REPLAYED else None
        if stored is None:
            self._unreplayable(time.time(), f"{method} {route}")
            return
        self._insert(Change(time.time(), method, route, dict(kwargs)), *stored)
        self._bound()

    def record_upload(self, local: str, remote: str, content_hash: str, keep: dict[str, Any]) -> None:
        """A large file the primary committed at `remote` from the local file `local`."""
        kwargs = {"local": local, "content_hash": content_hash, "keep": keep}
        self._insert(Change(time.time(), UPLOAD, remote, kwargs), json.dumps(kwargs), None)

    def _insert(self, change: Change, kwargs: str, data: bytes | None) -> None:
        self._write(
            "INSERT INTO changes (scope, at, method, route, kwargs, data, size) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (self.scope, change.at, change.method, change.route, kwargs, data, change.size),
        )

    def _bound(self) -> None:
        """Drop the oldest entries past MAX_BYTES (and remember that some were dropped)."""
        with self._lock:
            total = self.db.execute(
                "SELECT COALESCE(SUM(size), 0) FROM changes WHERE scope = ?", (self.scope,)
            ).fetchone()[0]
            if total <= MAX_BYTES:
                return
            rows = self.db.execute(
                "SELECT id, size FROM changes WHERE scope = ? ORDER BY id", (self.scope,)
            ).fetchall()
        drop = []
        for row_id, size in rows:
            if total <= MAX_BYTES:
                break
            drop.append(row_id)
            total -= size
        self._forget_ids(drop)
        self._write("INSERT OR IGNORE INTO overflowed (scope) VALUES (?)", (self.scope,))

    def _unreplayable(self, at: float, what: str) -> None:
        self._write("INSERT INTO unreplayable (scope, at, what) VALUES (?, ?, ?)", (self.scope, at, what))

    def lost(self, change: Change, why: str) -> None:
        """A journaled change that could not be replayed (the local file changed since)."""
        self._unreplayable(change.at, f"{change.method} {change.route}: {why}")

    # --- trimming and replaying -----------------------------------------------------------------
    def in_step_at(self, when: float | None) -> None:
        """The standby has everything acknowledged before `when` (its clock): those entries go."""
        if when is None:
            return
        cutoff = float(when) - CLOCK_MARGIN_S
        self._write("DELETE FROM changes WHERE scope = ? AND at < ?", (self.scope, cutoff))
        self._write("DELETE FROM unreplayable WHERE scope = ? AND at < ?", (self.scope, cutoff))

    def take(self) -> list[Change]:
        """Every entry still kept, oldest first; they stay until `done` (a replay cut short by a
        crash is replayed again by the next run: each change is idempotent or answers 404/409)."""
        with self._lock:
            rows = self.db.execute(
                "SELECT id, at, method, route, kwargs, data FROM changes WHERE scope = ? ORDER BY id",
                (self.scope,),
            ).fetchall()
        changes = []
        for row_id, at, method, route, kwargs, data in rows:
            args = json.loads(kwargs)
            if data is not None:
                args["data"] = bytes(data)
            changes.append(Change(at, method, route, args, row_id))
        return changes

    def done(self, changes: list[Change]) -> None:
        """These entries are on the standby now."""
        self._forget_ids([c.id for c in changes if c.id is not None])

    def _forget_ids(self, ids: list[int]) -> None:
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            self._write(f"DELETE FROM changes WHERE id IN ({marks})", tuple(part))

    def __len__(self) -> int:
        with self._lock:
            row = self.db.execute("SELECT COUNT(*) FROM changes WHERE scope = ?", (self.scope,)).fetchone()
        return int(row[0])
