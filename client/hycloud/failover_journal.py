"""The changes the primary acknowledged that the standby may not have yet, kept to be replayed
on the standby when the client fails over (docs/FAILOVER.md).

The standby is in step with everything acknowledged before its `in_step_at` (GET /v1/replication),
so entries older than that (less a margin for clock skew) are dropped whenever the client learns
it. Requests whose body is held in memory are replayed as sent. A large file's upload (its parts
went to the primary's bucket) is journaled by the SDK once committed (`record_upload`: the local
file, the path, the content hash) and replayed as a new upload to the standby, which finds the
content already there when the record stream has copied it (a dedup claim, no bytes sent). Other
changes are reported in `unreplayable` for the caller to send again.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from hycloud_core import content
from hycloud_core.merkle.hashing import file_hash

CLOCK_MARGIN_S = 60.0  # the standby's clock may be this far from ours
MAX_BYTES = 256 * 1024 * 1024  # beyond this the oldest entries go (and `overflowed` says so)
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


@dataclass
class Change:
    at: float
    method: str
    route: str
    kwargs: dict[str, Any]

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
        return path, file_hash(path, digest).hex()


@dataclass
class Journal:
    changes: list[Change] = field(default_factory=list)
    unreplayable: list[tuple[float, str]] = field(default_factory=list)
    overflowed: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, method: str, route: str, kwargs: dict[str, Any]) -> None:
        if (method, route) in PREPARING:
            return  # a large upload's steps: the SDK journals the upload whole once committed
        change = Change(time.time(), method, route, dict(kwargs))
        with self._lock:
            if (method, route) not in REPLAYED:
                self.unreplayable.append((change.at, f"{method} {route}"))
                return
            self.changes.append(change)
            while sum(c.size for c in self.changes) > MAX_BYTES:
                self.changes.pop(0)
                self.overflowed = True

    def record_upload(self, local: str, remote: str, content_hash: str, keep: dict[str, Any]) -> None:
        """A large file the primary committed at `remote` from the local file `local`."""
        change = Change(
            time.time(), UPLOAD, remote, {"local": local, "content_hash": content_hash, "keep": keep}
        )
        with self._lock:
            self.changes.append(change)

    def lost(self, change: Change, why: str) -> None:
        """A journaled change that could not be replayed (the local file changed since)."""
        with self._lock:
            self.unreplayable.append((change.at, f"{change.method} {change.route}: {why}"))

    def in_step_at(self, when: float | None) -> None:
        """The standby has everything acknowledged before `when` (its clock)."""
        if when is None:
            return
        with self._lock:
            self.changes = [c for c in self.changes if c.at >= when - CLOCK_MARGIN_S]
            self.unreplayable = [u for u in self.unreplayable if u[0] >= when - CLOCK_MARGIN_S]

    def take(self) -> list[Change]:
        with self._lock:
            taken, self.changes = self.changes, []
            return taken
