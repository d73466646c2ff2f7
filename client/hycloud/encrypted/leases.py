"""Uploads in flight and chunk collection keep out of each other's way (collect.py).

An upload writes a lease (`.hcleases/<random>`) before it lists which chunks the folder has, then
reads the collection marker (`.hcgc`); a collection writes the marker before it reads the leases.
Each side writes before it reads the other's, so at least one of them sees the other: the upload
waits for the collection to end, or the collection removes nothing this time. The lease names the
chunks the upload reuses instead of sending (touch-on-reuse) and is written again at each batch
of chunks, so a long upload's lease stays fresh; one not refreshed for `LEASE_TTL` belongs to an
upload that stopped, and is ignored (its chunks are young, so the grace period keeps them).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from hycloud_core.errors import ConflictError

from .store import Store

LEASES = ".hcleases"
MARKER = ".hcgc"
LEASE_TTL = 15 * 60.0  # seconds a lease counts without being written again
MARKER_TTL = 15 * 60.0  # a collection that stopped half way holds uploads back no longer than this
PREFIX = 16  # hex digits of a touched chunk's name a lease holds
WAIT_S, POLL_S = 120.0, 2.0  # how long an upload waits for a collection, and how often it looks


@dataclass
class Lease:
    store: Store
    name: str
    clock: Callable[[], float] = time.time
    touched: set[str] = field(default_factory=set)

    @classmethod
    def start(
        cls, store: Store, clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep
    ) -> Lease:
        """Announce an upload, then wait while a collection runs (ConflictError `busy` past WAIT_S)."""
        lease = cls(store, f"{LEASES}/{secrets.token_hex(8)}", clock)
        lease.write()
        deadline = clock() + WAIT_S
        while collecting(store, clock()):
            if clock() > deadline:
                lease.end()
                raise ConflictError(
                    "chunk collection is running in this encrypted folder; run again later", code="busy"
                )
            sleep(POLL_S)
        return lease

    def touch(self, chunk: str) -> None:
        """A chunk this upload relies on without sending it (written with the next `write`). Its
        first 16 hex digits are kept: enough to spare it, at a third of the bytes."""
        self.touched.add(chunk[:PREFIX])

    def write(self) -> None:
        body = {"at": self.clock(), "touched": sorted(self.touched)}
        self.store.write_many({self.name: json.dumps(body).encode()})

    def end(self) -> None:
        self.store.remove(self.name)


def live_leases(store: Store, now: float) -> dict[str, set[str]]:
    """Leases written within LEASE_TTL and the chunks each touched (name prefixes: `spared`)."""
    names = [f"{LEASES}/{n}" for n, mtime in store.listing(LEASES).items() if mtime > now - LEASE_TTL]
    found: dict[str, set[str]] = {}
    for name, blob in store.read_many(names).items():
        if blob is None:
            continue  # ended since listed
        body = json.loads(blob)
        if float(body.get("at", 0)) > now - LEASE_TTL:
            found[name] = set(body.get("touched", []))
    return found


def collecting(store: Store, now: float) -> bool:
    blob = store.read_many([MARKER])[MARKER]
    return blob is not None and float(json.loads(blob).get("at", 0)) > now - MARKER_TTL


def spared(name: str, touched: set[str]) -> bool:
    return name[:PREFIX] in touched
