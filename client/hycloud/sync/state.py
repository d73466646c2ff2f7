"""What sync remembers between runs, in SQLite beside the config (as `versions.py`).

- `hashes`: each local file's content hash with the size and mtime it had when hashed, so a
  rescan re-hashes only files whose size or mtime changed.
- `base`: per sync pair (endpoint, user, remote root, local root), each file's state at the last
  sync, written as each transfer completes: it tells "changed on one side" from "changed on both"
  and is the journal a killed sync resumes from (done files already agree and are not re-sent).
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hycloud_core.bundle import ABSENT
from hycloud_core.merkle.hashing import file_hash

from ..versions import state_path

HASH_RULES = 2  # PRAGMA user_version: the Merkle hash rules the base hashes were kept under
SCHEMA = """
CREATE TABLE IF NOT EXISTS sync_hashes (
    local TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, content_hash TEXT);
CREATE TABLE IF NOT EXISTS sync_base (
    pair TEXT, rel TEXT, merkle TEXT, content_hash TEXT, mtime REAL,
    PRIMARY KEY (pair, rel));
CREATE TABLE IF NOT EXISTS sync_pairs (pair TEXT PRIMARY KEY, endpoint TEXT, remote TEXT,
    local TEXT, started REAL, finished REAL);
"""


@dataclass(frozen=True)
class BaseEntry:
    """A file as both sides held it after the last sync: its Merkle hash and, if known, content hash."""

    merkle: str
    content_hash: str | None
    mtime: float


def pair_id(endpoint: str, user: str, remote_root: str, local_root: Path) -> str:
    key = "\n".join((endpoint.rstrip("/"), user, remote_root, str(local_root.resolve())))
    return hashlib.sha256(key.encode()).hexdigest()[:32]


class SyncState:
    """One connection per store; every write is its own short transaction (WAL)."""

    def __init__(self, pair: str, path: Path | None = None) -> None:
        self.pair = pair
        self.path = path or state_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(SCHEMA)
        self._upgrade()

    def _upgrade(self) -> None:
        """Base hashes kept under the earlier hash rules (a file's hash named its path) rewritten
        by today's (merkle/hashing.py) from their content hashes; a row without one is dropped
        (the next sync compares that file by content, as a first sync does)."""
        if self.db.execute("PRAGMA user_version").fetchone()[0] >= HASH_RULES:
            return
        rows = self.db.execute("SELECT pair, rel, content_hash FROM sync_base").fetchall()
        with self.db:
            for pair, rel, digest in rows:
                if digest:
                    merkle = file_hash(bytes.fromhex(digest)).hex()
                    self.db.execute(
                        "UPDATE sync_base SET merkle=? WHERE pair=? AND rel=?", (merkle, pair, rel)
                    )
                else:
                    self.db.execute("DELETE FROM sync_base WHERE pair=? AND rel=?", (pair, rel))
            self.db.execute(f"PRAGMA user_version={HASH_RULES}")

    def close(self) -> None:
        self.db.close()

    # --- local content hashes -------------------------------------------------------------------
    def cached_hashes(self, root: Path) -> dict[str, tuple[int, int, str]]:
        prefix = str(root.resolve()).rstrip("/") + "/"
        rows = self.db.execute(
            "SELECT local, size, mtime_ns, content_hash FROM sync_hashes WHERE local >= ? AND local < ?",
            (prefix, prefix[:-1] + "0"),
        )
        return {local: (size, mtime_ns, h) for local, size, mtime_ns, h in rows}

    def save_hashes(self, rows: Iterable[tuple[str, int, int, str]]) -> None:
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO sync_hashes VALUES (?,?,?,?)", rows)

    # --- state at the last sync -------------------------------------------------------------------
    def has_history(self) -> bool:
        """Whether a sync of this pair ever ran to its end."""
        row = self.db.execute("SELECT finished FROM sync_pairs WHERE pair=?", (self.pair,)).fetchone()
        return row is not None and row[0] is not None

    def interrupted(self) -> bool:
        row = self.db.execute(
            "SELECT started, finished FROM sync_pairs WHERE pair=?", (self.pair,)
        ).fetchone()
        return row is not None and (row[1] is None or row[1] < row[0])

    def begin(self, endpoint: str, remote: str, local: Path) -> None:
        now = time.time()
        with self.db:
            self.db.execute(
                "INSERT INTO sync_pairs VALUES (?,?,?,?,?,NULL) ON CONFLICT(pair) DO UPDATE SET started=?",
                (self.pair, endpoint, remote, str(local.resolve()), now, now),
            )

    def finish(self) -> None:
        with self.db:
            self.db.execute("UPDATE sync_pairs SET finished=? WHERE pair=?", (time.time(), self.pair))

    def base(self, only: Iterable[str] | None = None) -> dict[str, BaseEntry]:
        """Every file's state at the last sync, or only that of the paths in `only` (what a dry
        run plans from: the differing paths, not the whole tree)."""
        if only is None:
            rows = self.db.execute(
                "SELECT rel, merkle, content_hash, mtime FROM sync_base WHERE pair=?", (self.pair,)
            )
            return {rel: BaseEntry(m, h, t) for rel, m, h, t in rows}
        out: dict[str, BaseEntry] = {}
        wanted = list(only)
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = self.db.execute(
                "SELECT rel, merkle, content_hash, mtime FROM sync_base WHERE pair=? AND rel IN "
                f"({','.join('?' * len(chunk))})",
                (self.pair, *chunk),
            )
            out.update({rel: BaseEntry(m, h, t) for rel, m, h, t in rows})
        return out

    def agreed_version(self, rel: str) -> str:
        """The content hash both sides last agreed on at `rel` (preconditions.ABSENT: none)."""
        row = self.db.execute(
            "SELECT content_hash FROM sync_base WHERE pair=? AND rel=?", (self.pair, rel)
        ).fetchone()
        return row[0] if row and row[0] else ABSENT

    def record(self, rel: str, entry: BaseEntry | None) -> None:
        """One file's new agreed state (None: gone on both sides)."""
        with self.db:
            self._write(rel, entry)

    def record_many(self, entries: dict[str, BaseEntry | None]) -> None:
        with self.db:
            for rel, entry in entries.items():
                self._write(rel, entry)

    def _write(self, rel: str, entry: BaseEntry | None) -> None:
        if entry is None:
            self.db.execute("DELETE FROM sync_base WHERE pair=? AND rel=?", (self.pair, rel))
        else:
            self.db.execute(
                "INSERT OR REPLACE INTO sync_base VALUES (?,?,?,?,?)",
                (self.pair, rel, entry.merkle, entry.content_hash, entry.mtime),
            )
