"""The directory index: each folder of a namespace has an id, and records are keyed by it.

A folder's entry `NS#<user>` / `D#<parent id>/<name>` holds its `id`; the root's id is fixed
(ROOT), as is the trash's own root (TRASH: `rm -r` hangs a folder's entry below it, named by the
trash item). A file's record is `F#<parent id>/<name>`. So a path is resolved by one read per
level, and a folder's move, rename or trashing rewrites its one entry whatever it holds: its
records, keyed by ids that do not change, follow it.

Entries are made on demand, when a record is first written below a folder (a conditional put, so
two writers agree on one id), and are not removed with an empty folder: an entry only indexes
what EFS holds, and one left behind for a folder removed (or one the reconciler finds stale) is
reused if the folder comes back. Folder ids are random and never reused.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

from boto3.dynamodb.conditions import Key

from .. import paths
from .pages import query_all

ROOT = "root"
TRASH = "trash"
LAYOUT_SK = "LAYOUT"
LAYOUT_VERSION = 2
_POOL = ThreadPoolExecutor(8)


def file_sk(dir_id: str, name: str) -> str:
    return f"F#{dir_id}/{name}"


def entry_sk(parent_id: str, name: str) -> str:
    return f"D#{parent_id}/{name}"


def _join(folder: str, name: str) -> str:
    return f"{folder.rstrip('/')}/{name}"


def _query(table: Any, pk: str, prefix: str) -> list[dict[str, Any]]:
    return query_all(table, Key("pk").eq(pk) & Key("sk").begins_with(prefix), consistent=True)


def _prefixes(path: str) -> list[str]:
    """ "/a/b/c" -> ["/a", "/a/b", "/a/b/c"] (the root has none)."""
    parts = [p for p in path.split("/") if p]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


class Resolver:
    """Path → folder id for one user within one call: each level read once (consistently), the
    ids found kept for the rest of the call (never across calls: another request may move them)."""

    def __init__(self, table: Any, user: str, root: str = ROOT) -> None:
        self.table, self.user, self.root = table, user, root
        self.pk = f"NS#{user}"
        self.known: dict[str, str] = {}

    def dir_id(self, path: str, create: bool = False) -> str | None:
        """The folder's id; None when a level has no entry (with `create`, entries are made)."""
        parts = [p for p in path.split("/") if p]
        current, sofar = self.root, ""
        for name in parts:
            sofar = f"{sofar}/{name}"
            if sofar in self.known:
                current = self.known[sofar]
                continue
            item = self.table.get_item(
                Key={"pk": self.pk, "sk": entry_sk(current, name)}, ConsistentRead=True
            )
            found = item.get("Item")
            if found is None and not create:
                return None
            current = str(found["id"]) if found else self._make(current, name)
            self.known[sofar] = current
        return current

    def resolve_all(self, folders: Iterable[str]) -> None:
        """Index and resolve many folders (and those above them) side by side, a level at a time:
        each one read in a round of its level, instead of one after another; later lookups hit
        what is known."""
        every = {p for f in folders for p in _prefixes(f)}
        for depth in sorted({p.count("/") for p in every}):
            level = sorted(p for p in every if p.count("/") == depth and p not in self.known)
            list(_POOL.map(lambda p: self.dir_id(p, create=True), level))

    def _make(self, parent_id: str, name: str) -> str:
        """A new folder entry, or the one another writer made first."""
        new = secrets.token_hex(8)
        key = {"pk": self.pk, "sk": entry_sk(parent_id, name)}
        try:
            self.table.put_item(Item={**key, "id": new}, ConditionExpression="attribute_not_exists(sk)")
            return new
        except self.table.meta.client.exceptions.ConditionalCheckFailedException:
            return str(self.table.get_item(Key=key, ConsistentRead=True)["Item"]["id"])

    def forget(self, path: str) -> None:
        """Drop what is known at and below `path` (it was just moved)."""
        self.known = {
            p: i for p, i in self.known.items() if p != path and not p.startswith(path.rstrip("/") + "/")
        }


@dataclass
class Subtree:
    """What a walk by ids found below a folder: file records (path, item) and folder entry keys."""

    files: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)


class DirIndex:
    def __init__(self, table: Any) -> None:
        self.table = table
        self._migrated: set[str] = set()  # a namespace migrated stays so: safe to keep for good

    def resolver(self, user: str, root: str = ROOT) -> Resolver:
        return Resolver(self.table, user, root)

    # --- the namespace's layout ------------------------------------------------------------------
    def migrated(self, user: str) -> bool:
        """Whether no record of the layout keyed by path is left (migrate_records.py)."""
        if user in self._migrated:
            return True
        item = self.table.get_item(Key={"pk": f"NS#{user}", "sk": LAYOUT_SK}, ConsistentRead=True).get("Item")
        if item and int(item.get("version", 0)) >= LAYOUT_VERSION:
            self._migrated.add(user)
            return True
        return False

    def mark_migrated(self, user: str) -> None:
        self.table.put_item(Item={"pk": f"NS#{user}", "sk": LAYOUT_SK, "version": LAYOUT_VERSION})
        self._migrated.add(user)

    # --- entries ---------------------------------------------------------------------------------
    def entry_key(self, r: Resolver, path: str) -> dict[str, Any]:
        """The key of the entry naming `path` (its parent resolved; the entry need not exist)."""
        parent = r.dir_id(paths.parent(path)) or "-"
        return {"pk": r.pk, "sk": entry_sk(parent, paths.name(path))}

    def move(
        self, r: Resolver, src: str, dst: str, src_root: str | None = None, dst_root: str | None = None
    ) -> int:
        """Rewrite the entry of folder `src` as `dst` (below another root when given): one
        transaction, whatever the folder holds. 1 when moved, 0 when `src` has no entry."""
        src_r = r if src_root is None else Resolver(self.table, r.user, src_root)
        dst_r = r if dst_root is None else Resolver(self.table, r.user, dst_root)
        parent = src_r.dir_id(paths.parent(src))
        if parent is None:
            return 0
        src_key = {"pk": r.pk, "sk": entry_sk(parent, paths.name(src))}
        item = self.table.get_item(Key=src_key, ConsistentRead=True).get("Item")
        if item is None:
            return 0
        dst_parent = dst_r.dir_id(paths.parent(dst), create=True) or ROOT
        dst_sk = entry_sk(dst_parent, paths.name(dst))
        name = self.table.name
        self.table.meta.client.transact_write_items(
            TransactItems=[
                {"Delete": {"TableName": name, "Key": src_key}},
                {"Put": {"TableName": name, "Item": {"pk": r.pk, "sk": dst_sk, "id": str(item["id"])}}},
            ]
        )
        src_r.forget(src)
        dst_r.forget(dst)
        return 1

    def subtree(self, user: str, dir_id: str, path: str, deadline: float | None = None) -> Subtree | None:
        """Every file record and folder entry below folder `dir_id` (at `path`): one level at a
        time, the folders of a level queried side by side. None when `deadline` (monotonic)
        passes before a level below the first ends (no folder is begun past it)."""
        pk, out = f"NS#{user}", Subtree()
        level, until = [(dir_id, path)], None  # the folder's own level is always read
        while level:
            found = list(_POOL.map(self._children, repeat(pk), level, repeat(until)))
            if any(f is None for f in found):
                return None
            level, until = [], deadline
            for fid, at, dirs, files in (f for f in found if f is not None):
                for item in files:
                    where = _join(at, str(item["sk"])[len(f"F#{fid}/") :])
                    out.files.append((where, {**item, "path": where}))
                for item in dirs:
                    out.entries.append({"pk": pk, "sk": item["sk"]})
                    level.append((str(item["id"]), _join(at, str(item["sk"])[len(f"D#{fid}/") :])))
            if level and deadline is not None and time.monotonic() > deadline:
                return None
        return out

    def _children(
        self, pk: str, folder: tuple[str, str], until: float | None
    ) -> tuple[str, str, list[Any], list[Any]] | None:
        """A folder's entries and file records; None once `until` has passed, before either read
        (a read begun just before it ends after it: `rm -r`'s inline count overran by two)."""
        fid, at = folder
        if _passed(until):
            return None
        dirs = _query(self.table, pk, f"D#{fid}/")
        return None if _passed(until) else (fid, at, dirs, _query(self.table, pk, f"F#{fid}/"))


def _passed(until: float | None) -> bool:
    return until is not None and time.monotonic() > until
