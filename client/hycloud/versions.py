"""What the client remembers between runs: versions it transferred and the rates it measured.

Per (endpoint, user, remote path): the content hash of the version last transferred and the
local file that held it (path, mtime, size), so a later `get` knows the local base's hash without
reading it and a later `put` of an edited file knows which version the cloud holds; plus the
checksum list of that version, so a `put` can send an rsync-style delta after the old bytes are
gone. Recent transfer rates feed eq. 2. SQLite in WAL mode beside the config file: concurrent
clients each see whole rows, and a crashed client leaves nothing half written.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import statistics
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from .config import config_path

RECENT = 8  # rates kept per kind: recent enough to follow a changing link, enough to smooth it
MACHINE_RATES = ("compute",)
MAX_SIGNATURES = 256  # checksum lists kept, least recently written dropped first

SCHEMA = """
CREATE TABLE IF NOT EXISTS versions (
    endpoint TEXT, user TEXT, remote TEXT, content_hash TEXT, local TEXT,
    mtime_ns INTEGER, size INTEGER, signature BLOB, at REAL, chunk_state TEXT,
    PRIMARY KEY (endpoint, user, remote));
CREATE TABLE IF NOT EXISTS rates (kind TEXT, rate REAL, at REAL);
CREATE INDEX IF NOT EXISTS rates_kind ON rates (kind, at);
"""


def _add_chunk_state(db: sqlite3.Connection) -> None:
    """A store made before chunk states were kept gains their column."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(versions)")}
    if "chunk_state" not in columns:
        db.execute("ALTER TABLE versions ADD COLUMN chunk_state TEXT")


def _json(text: str | None) -> dict | None:
    try:
        value = json.loads(text) if text else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def state_path() -> Path:
    """$HYCLOUD_STATE, else `state.sqlite3` beside the config file."""
    default = config_path().parent / "state.sqlite3"
    return Path(os.environ.get("HYCLOUD_STATE", default))


@dataclass(frozen=True)
class Version:
    content_hash: str
    local: str
    mtime_ns: int
    size: int
    signature: bytes | None
    chunk_state: dict | None = None  # the file's chunk-size probabilities as last seen (seed 000)

    def matches(self, local: Path) -> bool:
        """Whether `local` is still the file as it was when this version was transferred."""
        try:
            st = local.stat()
        except OSError:
            return False
        return str(local.resolve()) == self.local and (st.st_mtime_ns, st.st_size) == (
            self.mtime_ns,
            self.size,
        )


OPEN_S = 5.0  # how long a store being made tries again while the file is locked


class VersionStore:
    """The store for one endpoint and API key; every method is one short transaction."""

    def __init__(self, endpoint: str, api_key: str, path: Path | None = None) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.user = hashlib.sha256(api_key.encode()).hexdigest()[:16]  # the key names the user
        self.path = path or state_path()
        self.enabled = self._open()

    def _open(self) -> bool:
        """Create the database; a place we cannot write to means a client without memory. A
        `database is locked` comes at once, with no busy wait, while another store of the same
        file sets its journal mode: tried again for OPEN_S, else this store would drop every
        version it is told."""
        deadline = time.monotonic() + OPEN_S
        while True:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with closing(self._connect()) as db, db:
                    db.execute("PRAGMA journal_mode=WAL")
                    db.executescript(SCHEMA)
                    _add_chunk_state(db)
                return True
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or time.monotonic() > deadline:
                    return False
                time.sleep(0.02)
            except (OSError, sqlite3.Error):
                return False

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def _run(self, sql: str, args: tuple = ()) -> list[tuple]:
        if not self.enabled:
            return []
        try:
            with closing(self._connect()) as db, db:
                return db.execute(sql, args).fetchall()
        except sqlite3.Error:
            return []

    # --- versions ------------------------------------------------------------------------------
    def get(self, remote: str) -> Version | None:
        rows = self._run(
            "SELECT content_hash, local, mtime_ns, size, signature, chunk_state FROM versions "
            "WHERE endpoint=? AND user=? AND remote=?",
            (self.endpoint, self.user, remote),
        )
        if not rows:
            return None
        content_hash, local, mtime_ns, size, signature, chunk_state = rows[0]
        return Version(content_hash, local, mtime_ns, size, signature, _json(chunk_state))

    def remember(
        self,
        remote: str,
        content_hash: str,
        local: Path,
        signature: bytes | None,
        chunk_state: dict | None = None,
    ) -> None:
        """Record that `local` now holds `content_hash`, the version at `remote`."""
        st = local.stat()
        self._run(
            "INSERT OR REPLACE INTO versions "
            "(endpoint, user, remote, content_hash, local, mtime_ns, size, signature, at, chunk_state) "
            "VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                self.endpoint,
                self.user,
                remote,
                content_hash,
                str(local.resolve()),
                st.st_mtime_ns,
                st.st_size,
                signature,
                time.time(),
                json.dumps(chunk_state) if chunk_state else None,
            ),
        )

    def set_chunk_state(self, remote: str, content_hash: str, state: dict) -> None:
        """Keep the file's newly learned chunk-size state, if that is still the version recorded."""
        self._run(
            "UPDATE versions SET chunk_state=? WHERE endpoint=? AND user=? AND remote=? AND content_hash=?",
            (json.dumps(state), self.endpoint, self.user, remote, content_hash),
        )

    def set_signature(self, remote: str, content_hash: str, signature: bytes) -> None:
        """Attach the checksum list of `content_hash`, if that is still the version recorded."""
        self._run(
            "UPDATE versions SET signature=?, at=? WHERE endpoint=? AND user=? AND remote=? AND content_hash=?",
            (signature, time.time(), self.endpoint, self.user, remote, content_hash),
        )
        self._run(
            "UPDATE versions SET signature=NULL WHERE signature IS NOT NULL AND rowid NOT IN "
            "(SELECT rowid FROM versions WHERE signature IS NOT NULL ORDER BY at DESC LIMIT ?)",
            (MAX_SIGNATURES,),
        )

    # --- rates ---------------------------------------------------------------------------------
    def _kind(self, kind: str) -> str:
        """Link rates belong to the endpoint; the machine's compute rate does not."""
        return kind if kind in MACHINE_RATES else f"{self.endpoint} {kind}"

    def add_rate(self, kind: str, rate: float) -> None:
        if not rate > 0:
            return
        kind = self._kind(kind)
        self._run("INSERT INTO rates VALUES (?,?,?)", (kind, rate, time.time()))
        self._run(
            "DELETE FROM rates WHERE kind=? AND rowid NOT IN "
            "(SELECT rowid FROM rates WHERE kind=? ORDER BY at DESC LIMIT ?)",
            (kind, kind, RECENT),
        )

    def rate(self, kind: str) -> float | None:
        """Median of the recent rates of `kind` (robust to one slow or fast outlier), None if none."""
        rows = self._run("SELECT rate FROM rates WHERE kind=?", (self._kind(kind),))
        return statistics.median(r[0] for r in rows) if rows else None
