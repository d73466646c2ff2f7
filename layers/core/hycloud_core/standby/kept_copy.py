"""What a user's trash, version history and snapshots keep, brought in step on the standby.

Neither lives in the namespace the Merkle exchange compares (namespace_copy.py): the trash is a
tree of its own on EFS (`trash/<user>/<item id>/<name>`) with one `TRASH#<user>` record per item,
and the history is `VER#<user>` records naming a small version's bytes in the versions area on EFS
(`versions/<user>/<hh>/<hash>`) or a large version's object. So, per user, both partitions of the
primary's table are compared with the standby's, and only what differs is sent:

- an item the standby lacks: its tree read from the primary's trash (a packed file as its bytes),
  sent to the apply function as trash ops, each link file's object and content copied first;
  its record is written last, so a standby record always names a tree the standby holds. Items
  never change once taken (they are only restored or purged), so one copy is enough;
- an item the standby has and the primary no longer does (restored, emptied, purged): its tree
  removed on the standby, then its record;
- a version record that is new or changed: its content first (a small version's bytes, unless a
  standby record names them already; a large version's object record and content), then the
  record, as the primary wrote it (same version id, time and author);
- a version record the primary dropped: the record deleted, then bytes no record names any more;
- a snapshot (`snapshots/<user>/<id>/...`, one `SNAP#<user>` record by name) as the trash's items
  are: a ready one the standby lacks is sent as snapshot ops (its tree, link files' content
  first), its record written once it landed; one the primary removed (or whose name now
  names another snapshot) is removed on the standby, tree then record. Snapshots never change.

The trash's folder entries (`NS#` items below the trash's root) are not copied: folder ids are
each table's own, and a restore indexes the tree it puts back from EFS (fs/trash.py).

Incremental: comparing the partitions reads every item of both, so it runs only when something
may have changed. Every change of the trash or the history comes with a change of the user's
Merkle root (an overwrite, a delete, `rm -r`, a restore) or of the trash area's listing on EFS
(an item emptied or purged), or is the trash's retention setting, and every snapshot made or
removed changes the snapshot area's listing; their fingerprint (the root's generation, one record
read, two directory listings) is kept per user in the standby's table
(`REPL#KEPT`, `<user>`) once a comparison landed whole. A request writes its version or trash
record moments after its Merkle change, under its lease, so a fingerprint counts as settled only
when a comparison began `SETTLE_S` after it was first seen; until then every pass compares again.
A backfill pass compares every user whatever the fingerprint. Not seen by the fingerprint: a
version record upkeep drops once expired (expired versions are listed and restored nowhere), so
the standby drops it at the user's next change.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from typing import Any

from boto3.dynamodb.conditions import Key

from ..fs.namespace import Namespace
from ..fs.snapshots import SnapshotArea
from ..fs.trash import TrashArea, count_pending
from ..fs.version_copies import VersionCopies
from ..store.locks import LEASE_S
from ..store.merkle_records import ROOT, MerkleRecords
from ..store.pages import query_items
from ..store.records import Records
from ..store.snapshot_records import PREFIX as SNAPSHOT_PREFIX
from ..store.snapshot_records import READY, SnapshotRecords
from ..store.trash_records import ITEM, SETTINGS, TrashItem, TrashRecords
from ..store.trash_records import PREFIX as TRASH_PREFIX
from ..store.version_records import PREFIX as VERSION_PREFIX
from .namespace_copy import Op, file_op, send, tree_ops
from .records_copy import ContentGone

Item = dict[str, Any]
COUNT_S = 5.0  # a pass counts one user's pending trash items for this long at most
Apply = Callable[[str, list[Op]], dict[str, Any]]
STATE_PK = "REPL#KEPT"  # standby's table, sk <user>: seen (fingerprint), since, checked
SETTLE_S = 2 * LEASE_S  # longer than a request holds the lease it writes its records under


def partition(table: Any, pk: str) -> dict[str, Item]:
    """Every item of a partition by sort key, as stored (numbers stay Decimal, to write back)."""
    return {str(i["sk"]): i for i in query_items(table, Key("pk").eq(pk), consistent=True)}


def _trash_ops(area: TrashArea, item_id: str) -> Iterator[Op]:
    """The item's tree as the primary's trash holds it, parents first; nothing when it is gone."""
    entry = area.entry(item_id)
    if entry is None:
        return
    ns = Namespace(area.root, item_id)  # rooted at the item's folder: "/<name>" is what it holds
    top = "/" + os.path.basename(entry)
    ops = tree_ops(ns, top) if os.path.isdir(entry) else iter([file_op(ns, top)])
    yield {"op": "trash-item", "trash": item_id}
    yield from ({**op, "trash": item_id} for op in ops if op is not None)


def _snapshot_ops(area: SnapshotArea, snap_id: str) -> Iterator[Op]:
    """The snapshot's tree as the primary holds it, parents first; nothing when it is gone."""
    tree = area.tree(snap_id)
    if tree is None:
        return
    yield {"op": "snapshot-item", "snapshot": snap_id}
    yield from ({**op, "snapshot": snap_id} for op in tree_ops(tree, "/") if op is not None)


def fingerprint(user: str, area: TrashArea, source: Any, snapshots: SnapshotArea) -> str:
    """What changes whenever the user's trash, history or snapshots may have: the Merkle root's
    generation (its hash would come back after a file removed and restored), the trash area's
    items on EFS, the trash's retention setting, the snapshot area's snapshots and which of them
    are ready (one made by a job is there, "making", before it is)."""
    root = (MerkleRecords(source, user).get(ROOT) or {}).get("gen")  # new at every change below
    key = {"pk": f"{TRASH_PREFIX}{user}", "sk": SETTINGS}
    setting = source.get_item(Key=key, ConsistentRead=True).get("Item", {}).get("retention_s")
    ready = sorted(s.id for s in SnapshotRecords(source, user).all() if s.state == READY)
    seen = [root, None if setting is None else int(setting), area.item_ids(), snapshots.ids(), ready]
    return hashlib.sha256(json.dumps(seen).encode()).hexdigest()


def _small_hashes(records: dict[str, Item]) -> set[str]:
    """The content hashes of the small versions among version records (their bytes on EFS)."""
    return {str(i["content_hash"]) for i in records.values() if i.get("kind") == "small"}


class KeptCopy:
    """One user's trash and history sent to the standby; `sent` and `failed` count ops."""

    def __init__(
        self,
        user: str,
        namespaces_dir: str,
        source: Any,
        target: Any,
        apply: Apply,
        before_link: Callable[[str], Any],
    ) -> None:
        self.user, self.source, self.target = user, source, target
        self.apply, self.before_link = apply, before_link
        self.area = TrashArea(namespaces_dir, user)
        self.snapshot_area = SnapshotArea(namespaces_dir, user)
        self.copies = VersionCopies(namespaces_dir, user)
        self.sent = self.failed = 0

    def _send(self, ops: Iterable[Op]) -> set[str]:
        """Send `ops`; the trash items, snapshots and version hashes of those that failed."""
        sent, failed = send(self.user, ops, self.apply, self.before_link)
        self.sent, self.failed = self.sent + sent, self.failed + len(failed)
        return {str(f.get("trash") or f.get("snapshot") or f.get("hash")) for f in failed}

    def run(self, force: bool = False) -> dict[str, int]:
        """Bring the trash and the history in step unless nothing changed since a settled
        comparison (`force`: compare anyway); ops sent and failed."""
        now, seen = time.time(), fingerprint(self.user, self.area, self.source, self.snapshot_area)
        key = {"pk": STATE_PK, "sk": self.user}
        state = self.target.get_item(Key=key, ConsistentRead=True).get("Item")
        same = state is not None and state["seen"] == seen
        if same and not force and float(state["checked"]) - float(state["since"]) >= SETTLE_S:
            return {"ops": 0, "failed": 0}
        self.trash()
        self.history()
        self.snapshots()
        if not self.failed:
            since = state["since"] if same and state is not None else Decimal(repr(round(now, 3)))
            self.target.put_item(
                Item={**key, "seen": seen, "since": since, "checked": Decimal(repr(round(now, 3)))}
            )
        return {"ops": self.sent, "failed": self.failed}

    # --- the trash ---------------------------------------------------------------------------------
    def trash(self) -> None:
        pk = f"{TRASH_PREFIX}{self.user}"
        ours = partition(self.source, pk)
        if self._count_pending(ours):
            ours = partition(self.source, pk)  # as counted
        theirs = partition(self.target, pk)
        missing = [sk[len(ITEM) :] for sk in ours if sk.startswith(ITEM) and sk not in theirs]
        offered: set[str] = set()

        def trees() -> Iterator[Op]:
            for item_id in missing:
                for op in _trash_ops(self.area, item_id):  # nothing when gone meanwhile
                    offered.add(item_id)
                    yield op

        landed = offered - self._send(trees())
        for sk, item in ours.items():
            if theirs.get(sk) == item or (
                sk.startswith(ITEM) and sk not in theirs and sk[len(ITEM) :] not in landed
            ):
                continue  # the same, or its tree is not on the standby (yet): the next pass tries again
            if item.get("pending"):  # still not counted: the next pass tries again
                self.failed += 1
                continue
            self.target.put_item(Item=item)
        gone = sorted(theirs.keys() - ours.keys())
        still = self._send(
            {"op": "trash-purge", "trash": sk[len(ITEM) :]} for sk in gone if sk.startswith(ITEM)
        )
        for sk in gone:
            if sk[len(ITEM) :] not in still:
                self.target.delete_item(Key={"pk": pk, "sk": sk})

    def _count_pending(self, ours: dict[str, Item]) -> bool:
        """Count the primary's items still pending (rm -r leaves a tree it did not count in time),
        as its next listing or upkeep would, for COUNT_S at most; whether there was one. A pending
        record on the standby would be counted there from file records, which a trashed tree has
        none of (size 0)."""
        items = (TrashItem.from_dict(i) for sk, i in ours.items() if sk.startswith(ITEM))
        return count_pending(Records.over(self.source), TrashRecords(self.source, self.user), items, COUNT_S)

    # --- the snapshots ------------------------------------------------------------------------------
    def snapshots(self) -> None:
        pk = f"{SNAPSHOT_PREFIX}{self.user}"
        ours, theirs = partition(self.source, pk), partition(self.target, pk)
        ready = {sk: i for sk, i in ours.items() if i.get("state") == READY}
        stale = {sk: i for sk, i in theirs.items() if sk not in ready or ready[sk]["id"] != i["id"]}
        dropped = self._send({"op": "snapshot-drop", "snapshot": str(i["id"])} for i in stale.values())
        for sk, item in stale.items():
            if str(item["id"]) not in dropped:
                self.target.delete_item(Key={"pk": pk, "sk": sk})
        wanted = {sk: i for sk, i in ready.items() if theirs.get(sk) != i}
        offered: set[str] = set()

        def trees() -> Iterator[Op]:
            for item in wanted.values():
                for op in _snapshot_ops(self.snapshot_area, str(item["id"])):  # none when gone meanwhile
                    offered.add(str(item["id"]))
                    yield op

        landed = offered - self._send(trees())
        for item in wanted.values():
            if str(item["id"]) in landed:
                self.target.put_item(Item=item)

    # --- the history -------------------------------------------------------------------------------
    def history(self) -> None:
        pk = f"{VERSION_PREFIX}{self.user}"
        ours, theirs = partition(self.source, pk), partition(self.target, pk)
        changed = {sk: item for sk, item in ours.items() if theirs.get(sk) != item}
        held = _small_hashes(theirs)
        wanted = _small_hashes(changed) - held
        offered: set[str] = set()

        def copies() -> Iterator[Op]:  # read as the batches go, not all held at once
            for h in sorted(wanted):
                if (op := self._version_op(h)) is not None:
                    offered.add(h)
                    yield op

        held |= offered - self._send(copies())
        for item in changed.values():
            h = str(item.get("content_hash", ""))
            if item.get("kind") == "small" and h not in held:
                continue  # its bytes purged on the primary meanwhile, or failed: the next pass
            if item.get("kind") == "large" and not item.get("erasure") and not self._large(h):
                continue
            self.target.put_item(Item=item)
        with self.target.batch_writer() as batch:
            for sk in theirs.keys() - ours.keys():
                batch.delete_item(Key={"pk": pk, "sk": sk})
        dropped = _small_hashes(theirs) - _small_hashes(ours)
        self._send({"op": "version-drop", "hash": h} for h in sorted(dropped))

    def _large(self, content_hash: str) -> bool:
        """Put a large version's object (record, content) on the standby; False when the
        primary's bucket no longer holds it (its record would name nothing there)."""
        try:
            self.before_link(content_hash)
        except ContentGone:
            return False
        key = {"pk": f"OBJ#{content_hash}", "sk": "OBJ"}  # absent when the primary has no record either
        return "Item" in self.target.get_item(Key=key, ConsistentRead=True)

    def _version_op(self, content_hash: str) -> Op | None:
        """The op that keeps a small version's bytes on the standby; None when they are gone."""
        try:
            with open(self.copies.path(content_hash), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        return {"op": "version", "hash": content_hash, "data": base64.b64encode(data).decode()}
