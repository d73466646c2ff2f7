"""Upkeep of version history: drop versions past their retention, and the content only they kept.

Run before the collector in the same upkeep round: once a large version's record is gone, the
collector no longer marks its object, and reclaims it (after its `keep_until`, which lapses with
the version) if nothing else names it (store/collector.py). A small version's bytes are the
user's own copy in the versions area: removed here once no kept record names their hash and
they are older than the grace period (fs/version_copies.py says why that is safe against a
version being kept at the same moment).

`retention_s` lets an administrator drop versions sooner than their recorded expiry (upkeep's
`{"version_retention_s": s}`): those kept longer than `s` go, and with them their objects'
`keep_until`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from ..store.objects import Objects
from ..store.version_records import VersionRecord, VersionRecords
from .version_copies import VersionCopies, versions_root


@dataclass
class Purged:
    records: int = 0
    copies: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"records": self.records, "copies": len(self.copies)}


def _users(namespaces_dir: str) -> list[str]:
    """Every user with a namespace or a versions area."""
    found: set[str] = set()
    for folder in (namespaces_dir, versions_root(namespaces_dir)):
        if os.path.isdir(folder):
            found.update(u for u in os.listdir(folder) if os.path.isdir(os.path.join(folder, u)))
    return sorted(found)


def _expired(record: VersionRecord, now: float, retention_s: float | None) -> bool:
    return record.expires <= now or (retention_s is not None and record.at + retention_s <= now)


def purge_user(
    objects: Objects,
    namespaces_dir: str,
    user: str,
    grace_s: float,
    now: float,
    retention_s: float | None = None,
) -> Purged:
    """One user's expired versions and the small copies no kept version names."""
    records = VersionRecords(objects.table, user)
    every = records.all()
    expired = [r for r in every if _expired(r, now, retention_s)]
    records.delete(expired)
    if retention_s is not None:
        for record in expired:
            if record.kind == "large" and record.expires > now:
                objects.release(record.content_hash, record.expires)
    kept = {r.content_hash for r in every if r.kind == "small" and not _expired(r, now, retention_s)}
    copies = VersionCopies(namespaces_dir, user).purge(kept, cutoff=now - grace_s)
    return Purged(len(expired), copies)


def purge_expired_versions(
    objects: Objects,
    namespaces_dir: str,
    grace_s: float,
    now: float | None = None,
    retention_s: float | None = None,
) -> Purged:
    """Every user's: what upkeep's hourly walk runs before the collector."""
    now = time.time() if now is None else now
    total = Purged()
    for user in _users(namespaces_dir):
        one = purge_user(objects, namespaces_dir, user, grace_s, now, retention_s)
        total.records += one.records
        total.copies += one.copies
    return total
