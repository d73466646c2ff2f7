"""Upkeep's check that file records agree with the namespace on EFS, and its repair.

EFS is the source of truth; a record is an index entry written after EFS under the same lease,
so a crash between the two leaves them apart. The check walks both; each path that differs is
re-read under its lease and the record rewritten (or removed) from what EFS holds. Temporary
files older than the grace period belong to no running operation and are removed. The Merkle
hashes (store/merkle_records.py) are repaired from EFS the same way (fs/merkle_scan.py); a tree
still keyed by path (the layout before folder ids) is dropped first and so written again whole.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from ..store.locks import leased_paths, passing, path_leases
from ..store.merkle_records import LAYOUT_VERSION, MerkleRecords
from ..store.records import Records
from .merkle_scan import rebuild, repair
from .namespace import TMP_PREFIX, Namespace
from .segments_records import packed_marks


@dataclass
class Reconciled:
    records_written: list[str] = field(default_factory=list)
    records_removed: list[str] = field(default_factory=list)
    temporary_removed: int = 0
    merkle_repaired: list[str] = field(default_factory=list)
    merkle_rebuilt: int = 0  # nodes written by the migration of trees keyed by path

    def merge(self, other: Reconciled) -> None:
        self.records_written += other.records_written
        self.records_removed += other.records_removed
        self.merkle_repaired += other.merkle_repaired
        self.merkle_rebuilt += other.merkle_rebuilt
        self.temporary_removed += other.temporary_removed


def expected_record(ns: Namespace, path: str) -> dict[str, Any] | None:
    """The record attributes EFS says `path` should have (None: no file there)."""
    entry = ns.file_entry(path)
    if entry is None:
        return None
    if entry.storage == "large":
        return {"kind": "large", "size": entry.size, "content_hash": entry.content_hash}
    if stub := ns.segment_stub(path):  # packed: the record says where (fs/segments_records.py)
        return {"kind": "small", "size": entry.size, "sha256": stub.sha256, **packed_marks(stub)}
    return {"kind": "small", "size": entry.size, "sha256": ns.stat_hashed(path).sha256}


def _matches(record: dict[str, Any] | None, expected: dict[str, Any] | None) -> bool:
    if record is None or expected is None:
        return record is None and expected is None
    return all(record.get(k) == v for k, v in expected.items())


def _files_on_efs(ns: Namespace, now: float, grace_s: float, out: Reconciled) -> set[str]:
    found: set[str] = set()
    for top, _dirs, files in os.walk(ns.root):
        rel = os.path.relpath(top, ns.root)
        base = "" if rel == "." else "/" + rel.replace(os.sep, "/")
        for name in files:
            host = os.path.join(top, name)
            if name.startswith(TMP_PREFIX):
                if now - os.lstat(host).st_mtime > grace_s:
                    os.unlink(host)
                    out.temporary_removed += 1
                continue
            if not os.path.islink(host):
                found.add(f"{base}/{name}")
    return found


def _under_any(path: str, tops: list[str]) -> bool:
    return any(path == t or path.startswith(t.rstrip("/") + "/") for t in tops)


def reconcile_user(
    records: Records, ns: Namespace, user: str, grace_s: float, now: float | None = None
) -> Reconciled:
    out = Reconciled()
    busy = leased_paths(records.table, user)
    on_efs = _files_on_efs(ns, time.time() if now is None else now, grace_s, out)
    recorded = {r["path"]: r for r in records.files_under(user, "/")}
    for path in sorted(on_efs | set(recorded)):
        if _under_any(path, busy):  # an operation (a tree job, say) is changing it: next round
            continue
        if path in recorded and path in on_efs and _matches(recorded[path], expected_record(ns, path)):
            continue
        with path_leases(records.table, user, [path], on_snapshot=passing):
            expected, record = expected_record(ns, path), records.get_file(user, path)
            if _matches(record, expected):
                continue
            if expected is None:
                records.delete_file(user, path)
                out.records_removed.append(path)
            else:
                records.put_file(user, path, **expected)
                out.records_written.append(path)
    if not busy:  # Merkle hashes: the next round repairs a tree some operation is changing
        lease = lambda path: path_leases(records.table, user, [path], on_snapshot=passing)  # noqa: E731
        redone = set(out.records_written) | set(out.records_removed)
        known = {
            p: (int(r["size"]), r["sha256"])
            for p, r in recorded.items()
            if r.get("kind") == "small" and "sha256" in r and p not in redone
        }
        tree = MerkleRecords(records.table, user)
        if tree.layout_version() < LAYOUT_VERSION:
            out.merkle_rebuilt += rebuild(ns, tree, known)
        else:
            out.merkle_repaired = repair(ns, tree, lease, known)
    return out


def reconcile_all(records: Records, namespaces_dir: str, grace_s: float) -> Reconciled:
    total = Reconciled()
    if not os.path.isdir(namespaces_dir):
        return total
    for user in sorted(os.listdir(namespaces_dir)):
        if os.path.isdir(os.path.join(namespaces_dir, user)):
            total.merge(reconcile_user(records, Namespace(namespaces_dir, user), user, grace_s))
    return total
