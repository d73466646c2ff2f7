"""The single DynamoDB table and its key design.

One table keeps every record so that a user's whole state is one partition query and the
deployment has one thing to back up and replicate to a standby region:

| record | pk | sk | attributes |
| --- | --- | --- | --- |
| user, API key, user id | `USER#<name>`, `KEY#<key id>`, `USERID#<id>` | see users.py | |
| directory entry of a namespace | `NS#<user>` | `D#<parent dir id>/<name>` | id (the directory's own id; dir_index.py) |
| file in a namespace | `NS#<user>` | `F#<parent dir id>/<name>` | kind (small/large), size, sha256, mtime |
| the namespace's record layout | `NS#<user>` | `LAYOUT` | version (2: every record keyed by directory id; migrate_records.py) |
| Merkle node of a namespace, its layout | `MK#<user>` | `/` (root), `<parent dir id>/<name>`; `LAYOUT` | name, kind (file/dir/tombstone), hash, digest, id, gen, mtime, expiration (TTL, tombstones, 30 days) (merkle_records.py); version (3) |
| large-file object | `OBJ#<content hash>` | `OBJ` | state, size, s3_key, touched, gen, keep_until, links (objects.py) |
| earlier version of a file | `VER#<user>` | `<path>//<version id>` | kind, content_hash, sha256, size, mtime, by, at, reason, expires (version_records.py) |
| trash item, the user's trash retention | `TRASH#<user>` | `I#<item id>`, `SETTINGS` | path, type, size, files, at, by; retention_s (trash_records.py) |
| snapshot of a folder | `SNAP#<user>` | `S#<name>` | name, id (its folder in the snapshot area), path, at, by, files, bytes, state (snapshot_records.py) |
| pending upload | `UPLOAD#<user>` | `<content hash>` | upload_id, size, part digests, or a dedup challenge |
| subtree lease | `LOCK#<user>` | `<path>` | owner, expires (see locks.py) |
| share link, a user's share links | `SHARE#<token>`, `SHARES#<user>` | `SHARE`, `S#<token>` / `SERVED` | see shares.py |
| collector state | `GC#STATE` | `TREE` | epoch: bumped by folder moves (see collector.py) |
| job ledger | `JOB#<user>` | `<job key>` | attempt, fresh_until, expiration (TTL, 91 days: jobs/ledger.py) |
| answer to an Idempotency-Key | `IDEM` | `controller#<sha256 of user, key, method, route>` | status, expiration (TTL), data, validation (the controller's idempotency.py) |

`<user>` in `NS#`, `MK#`, `VER#`, `TRASH#`, `UPLOAD#` and `LOCK#` is the user's internal id, never reused (users.py).

File records are keyed by their folder's id and their name, as an inode-based metadata engine keys
them: a folder's move or rename rewrites its one entry (`D#<parent id>/<name>` → its id), not the
records below it, and `rm -r` moves that entry under the trash (dir_index.py). A path is resolved
by one read per level. Records written before this layout (`F#<path>`, a path always starts with
"/") are read as well until the namespace is migrated (migrate_records.py, an upkeep round).
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import boto3
from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from .. import paths
from .dir_index import ROOT, TRASH, DirIndex, Resolver, Subtree, file_sk
from .merkle_records import MerkleRecords
from .old_layout import old_file_key
from .pages import in_rounds, plain
from .pages import query_all as query_all

_plain = plain  # the name the store's modules import it by
DELETE_ROUND = 500  # records a bounded purge deletes between two looks at its deadline


def _attrs(item: dict[str, Any]) -> dict[str, Any]:
    """A file record's attributes without its key (and the path a read adds)."""
    return {k: v for k, v in item.items() if k not in ("pk", "sk", "path")}


def _under(dst: str, rel: str) -> str:
    return dst.rstrip("/") + rel if dst != "/" else rel


class Records:
    """File records by path; paths are resolved through the directory index (dir_index.py)."""

    def __init__(self, table_name: str, resource: Any | None = None) -> None:
        self.table = (resource or boto3.resource("dynamodb")).Table(table_name)
        self.dirs = DirIndex(self.table)

    @classmethod
    def over(cls, table: Any) -> Records:
        """Records over a table object already at hand (modules given only the table)."""
        records = cls.__new__(cls)
        records.table, records.dirs = table, DirIndex(table)
        return records

    def _old(self, user: str) -> bool:
        """Whether records of the layout before directory ids may remain (not migrated yet)."""
        return not self.dirs.migrated(user)

    # files
    def file_key(
        self, user: str, path: str, create: bool = False, r: Resolver | None = None
    ) -> dict[str, Any] | None:
        """The key of `path`'s record; None when a folder above has no entry (and not `create`)."""
        r = r or self.dirs.resolver(user)
        parent = r.dir_id(paths.parent(path), create)
        return None if parent is None else {"pk": f"NS#{user}", "sk": file_sk(parent, paths.name(path))}

    def put_file(self, user: str, path: str, **attrs: Any) -> None:
        key = self.file_key(user, path, create=True)
        item = {**(key or {}), "mtime": int(time.time()), **attrs}
        if not self._old(user):
            self.table.put_item(Item=item)
            return
        client, name = self.table.meta.client, self.table.name  # both at once: never two records
        client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": name, "Item": _decimals(item)}},
                {"Delete": {"TableName": name, "Key": old_file_key(user, path)}},
            ]
        )

    def get_file(self, user: str, path: str) -> dict[str, Any] | None:
        if self._old(user):  # the old record first: a migration moves it to the new key atomically
            old = self.table.get_item(Key=old_file_key(user, path)).get("Item")
            if old:
                return {**_plain(old), "path": path}
        key = self.file_key(user, path)
        item = self.table.get_item(Key=key).get("Item") if key else None
        return {**_plain(item), "path": path} if item else None

    def delete_file(self, user: str, path: str) -> None:
        if self._old(user):
            self.table.delete_item(Key=old_file_key(user, path))
        key = self.file_key(user, path)
        if key:
            self.table.delete_item(Key=key)

    def files_under(self, user: str, path: str) -> list[dict[str, Any]]:
        """Records of `path` itself and of everything below it, each with its `path`."""
        path = paths.normalize(path)
        found: dict[str, dict[str, Any]] = {}
        if self._old(user):  # before the new layout's walk: a record migrated meanwhile shows in it
            found |= {i["path"]: i for i in self._old_under(user, path)}
        own = self.get_file(user, path) if path != "/" else None
        if own:
            found[path] = own
        dir_id = self.dirs.resolver(user).dir_id(path)
        if dir_id is not None and (below := self.dirs.subtree(user, dir_id, path)) is not None:
            found |= {p: i for p, i in below.files}
        return list(found.values())

    def trashed_files(
        self, user: str, item_id: str, deadline: float | None = None
    ) -> list[dict[str, Any]] | None:
        """The file records below a trashed folder (what its trash item holds); None when
        `deadline` (monotonic) passes before the walk ends."""
        dir_id = self.dirs.resolver(user, root=TRASH).dir_id(f"/{item_id}")
        if dir_id is None:
            return []
        below = self.dirs.subtree(user, dir_id, "/", deadline)
        return None if below is None else [i for _, i in below.files]

    def _old_under(self, user: str, path: str) -> list[dict[str, Any]]:
        """Records of the old layout at and below `path` (only before the migration)."""
        prefix = "F#/" if path == "/" else f"F#{path}/"
        below = query_all(self.table, Key("pk").eq(f"NS#{user}") & Key("sk").begins_with(prefix), True)
        own = (
            []
            if path == "/"
            else [i for i in [self.table.get_item(Key=old_file_key(user, path)).get("Item")] if i]
        )
        return [{**_plain(i), "path": i["sk"][2:]} for i in own + below]

    def rewrite_subtree(self, user: str, src: str, dst: str | None, keep_src: bool = False) -> None:
        """Move (or copy, with keep_src) the records at and under src to dst; dst None deletes them.

        A move is one entry's rewrite for a folder (its records stay under its id) and one record's
        for a file; a copy writes every record again (new folder ids); a delete removes them all."""
        src = paths.normalize(src)
        if dst is None:
            return self._delete_subtree(user, src)
        dst = paths.normalize(dst)
        if keep_src:
            files = {
                _under(dst, i["path"][len(src.rstrip("/")) :]): _attrs(i) for i in self.files_under(user, src)
            }
            return self._put(user, files, stamp=False)
        self._move(user, src, dst)

    def _move(self, user: str, src: str, dst: str) -> int:
        r = self.dirs.resolver(user)
        moved = 0
        own_key = self.file_key(user, src, r=r)
        own = self.table.get_item(Key=own_key, ConsistentRead=True).get("Item") if own_key else None
        if own and own_key:
            self.table.put_item(Item={**own, **(self.file_key(user, dst, True, r) or {})})
            self.table.delete_item(Key=own_key)
            moved += 1
        moved += self.dirs.move(r, src, dst)
        if self._old(user):
            moved += self._move_old(user, src, dst, None)
        return moved

    def _move_old(self, user: str, src: str, dst: str, limit: int | None) -> int:
        """Old-layout records at and below src put at dst in the new layout (a page when `limit`)."""
        items = self._old_under(user, src)[:limit]
        files = {_under(dst, i["path"][len(src.rstrip("/")) :]): _attrs(i) for i in items}
        self._put(user, files, stamp=False, old_too=False)
        self._delete_keys([{"pk": i["pk"], "sk": i["sk"]} for i in items])
        return len(items)

    def _delete_subtree(self, user: str, path: str) -> None:
        keys = [{"pk": i["pk"], "sk": i["sk"]} for i in self.files_under(user, path)]
        r = self.dirs.resolver(user)
        dir_id = r.dir_id(path) if path != "/" else None
        if dir_id is not None:
            keys += (self.dirs.subtree(user, dir_id, path) or Subtree()).entries
            keys.append(self.dirs.entry_key(r, path))
        self._delete_keys(keys)

    def _delete_keys(self, keys: list[dict[str, Any]]) -> None:
        with self.table.batch_writer(overwrite_by_pkeys=["pk", "sk"]) as batch:
            for key in keys:
                batch.delete_item(Key=key)

    def _put(self, user: str, files: dict[str, dict[str, Any]], stamp: bool, old_too: bool = True) -> None:
        r, now = self.dirs.resolver(user), int(time.time())
        r.resolve_all({paths.parent(p) for p in files})
        old = old_too and self._old(user)
        with self.table.batch_writer(overwrite_by_pkeys=["pk", "sk"]) as batch:
            for path, attrs in files.items():
                key = self.file_key(user, path, True, r) or {}
                batch.put_item(Item={**key, **({"mtime": now} if stamp else {}), **attrs})
        if old:
            self._delete_keys([old_file_key(user, p) for p in files])

    def put_files(self, user: str, files: dict[str, dict[str, Any]]) -> None:
        """Records of many files ({path: attributes}) in batches: a tree job's page of copies."""
        self._put(user, files, stamp=True)

    def delete_files(self, user: str, paths_: list[str]) -> None:
        r = self.dirs.resolver(user)
        keys = [k for p in paths_ if (k := self.file_key(user, p, r=r))]
        if self._old(user):
            keys += [old_file_key(user, p) for p in paths_]
        self._delete_keys(keys)

    def move_page(self, user: str, src: str, dst: str, limit: int) -> int:
        """Move what is left below the folder `src` to `dst` (its entry, and up to `limit` records
        of the old layout); how many moved. The moved ones leave `src`, so calling it again
        continues where it stopped and answers 0 when nothing is left."""
        r = self.dirs.resolver(user)
        moved = self.dirs.move(r, paths.normalize(src), paths.normalize(dst))
        if self._old(user):
            moved += self._move_old(user, paths.normalize(src), paths.normalize(dst), limit)
        return moved

    # trash
    def to_trash(self, user: str, path: str, item_id: str) -> None:
        """`rm -r`: the folder's entry moves below the trash's own root, its records stay where
        they are (one entry rewritten); old-layout records below it are deleted."""
        r = self.dirs.resolver(user)
        self.dirs.move(r, paths.normalize(path), f"/{item_id}", dst_root=TRASH)
        if self._old(user):
            self._delete_keys([{"pk": i["pk"], "sk": i["sk"]} for i in self._old_under(user, path)])

    def from_trash(self, user: str, item_id: str, dst: str) -> bool:
        """A trashed folder's entry back at `dst` (its records with it); False when it has none."""
        r = self.dirs.resolver(user)
        return self.dirs.move(r, f"/{item_id}", paths.normalize(dst), src_root=TRASH) > 0

    def purge_trashed(self, user: str, item_id: str, deadline: float | None = None) -> bool:
        """Delete a trashed folder's entry and every record and Merkle node below it (upkeep,
        emptying); False when `deadline` (monotonic) passed first: what was deleted stays so (a
        round at least), and the rest is deepest first, so the next call still reaches it from
        the folder's entry."""
        r = self.dirs.resolver(user, root=TRASH)
        dir_id = r.dir_id(f"/{item_id}")
        if dir_id is None:
            return True
        if not MerkleRecords(self.table, user).drop_below(dir_id, deadline):
            return False
        below = self.dirs.subtree(user, dir_id, "/") or Subtree()
        keys = [{"pk": i["pk"], "sk": i["sk"]} for _, i in below.files] + below.entries[::-1]
        if not in_rounds(keys, DELETE_ROUND, deadline, self._delete_keys):
            return False
        self._delete_keys([self.dirs.entry_key(r, f"/{item_id}")])
        return True

    # pending uploads
    def get_upload(self, user: str, content_hash: str) -> dict[str, Any] | None:
        item = self.table.get_item(Key={"pk": f"UPLOAD#{user}", "sk": content_hash}, ConsistentRead=True).get(
            "Item"
        )
        return _plain(item) if item else None

    def put_upload(self, user: str, content_hash: str, **attrs: Any) -> None:
        self.table.put_item(
            Item={"pk": f"UPLOAD#{user}", "sk": content_hash, "created": int(time.time()), **attrs}
        )

    def update_upload(self, user: str, content_hash: str, expected: dict[str, Any], **attrs: Any) -> bool:
        """Set `attrs` on an upload whose fields still hold `expected`; False when one does not."""
        names = {f"#s{i}": k for i, k in enumerate(attrs)} | {f"#e{i}": k for i, k in enumerate(expected)}
        values = {f":s{i}": v for i, v in enumerate(attrs.values())}
        values |= {f":e{i}": v for i, v in enumerate(expected.values())}
        try:
            self.table.update_item(
                Key={"pk": f"UPLOAD#{user}", "sk": content_hash},
                UpdateExpression="SET " + ", ".join(f"#s{i} = :s{i}" for i in range(len(attrs))),
                ConditionExpression=" AND ".join(f"#e{i} = :e{i}" for i in range(len(expected))),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except ClientError as err:
            if err.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def delete_upload(self, user: str, content_hash: str) -> None:
        self.table.delete_item(Key={"pk": f"UPLOAD#{user}", "sk": content_hash})


def _decimals(item: dict[str, Any]) -> dict[str, Any]:
    """Floats as DynamoDB takes them (the table resource converts them; its client needs them so)."""
    return {k: Decimal(str(v)) if isinstance(v, float) else v for k, v in item.items()}


__all__ = ["ROOT", "Records", "query_all"]
