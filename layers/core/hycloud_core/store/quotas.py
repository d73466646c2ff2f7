"""Per-user quotas (bytes and files), enforced when a change commits.

One counter item per user, `USAGE#<user id>` / `USAGE`: `bytes` and `files` in use, and the
user's own limits `quota_bytes` / `quota_files` when an operator set them (-1: unlimited);
otherwise the deployment's defaults apply (`HYCLOUD_QUOTA_BYTES`, `HYCLOUD_QUOTA_FILES`; unset:
unlimited). Bytes are the files' logical sizes; directories are free.

A change that grows usage reserves its growth with one conditional update before it happens
(so concurrent writes cannot together pass the limit) and gives it back if it fails; a change
that shrinks usage is counted after it succeeded. A crash between the two leaves the counter
off; `recount` rebuilds it from the namespace's file records, and upkeep calls it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from boto3.dynamodb.conditions import Attr, ConditionBase

from .. import constants as c
from .. import content
from ..errors import BadRequestError, ConflictError, ForbiddenError, NotFoundError
from .records import Records, _plain

UNLIMITED = -1
RETRIES = 5


@dataclass(frozen=True)
class Change:
    """Bytes and files a change adds (negative: frees)."""

    bytes: int = 0
    files: int = 0

    def __add__(self, other: Change) -> Change:
        return Change(self.bytes + other.bytes, self.files + other.files)

    def __sub__(self, other: Change) -> Change:
        return Change(self.bytes - other.bytes, self.files - other.files)

    def __neg__(self) -> Change:
        return Change(-self.bytes, -self.files)

    @property
    def grows(self) -> bool:
        return self.bytes > 0 or self.files > 0


@dataclass(frozen=True)
class Limits:
    """None: unlimited."""

    bytes: int | None = None
    files: int | None = None

    @classmethod
    def from_env(cls) -> Limits:
        return cls(_env_limit(c.ENV_QUOTA_BYTES), _env_limit(c.ENV_QUOTA_FILES))


def _env_limit(name: str) -> int | None:
    value = os.environ.get(name, "").strip()
    return None if not value or int(value) < 0 else int(value)


def _own_limit(item: dict[str, Any], name: str, default: int | None) -> int | None:
    """The user's own limit if set (-1 means unlimited), else the deployment's."""
    if name not in item:
        return default
    return None if int(item[name]) < 0 else int(item[name])


class QuotaExceeded(ForbiddenError):
    code = "quota-exceeded"


class Quota:
    """Usage counter and limits of one user (by internal id); `records=None` counts nothing."""

    def __init__(self, records: Records | None, user: str, defaults: Limits | None = None) -> None:
        self.records, self.user = records, user
        self.defaults = defaults if defaults is not None else Limits.from_env()
        self.key = {"pk": f"USAGE#{user}", "sk": "USAGE"}
        # asked before a change is refused: True when it lowered the count (rm -r's pending trash)
        self.on_full: Callable[[], bool] | None = None

    # --- what changes would do ---------------------------------------------------------------
    def writing(self, ns: Any, path: str, size: int) -> AbstractContextManager[None]:
        """Around a write of `size` bytes at `path` (replacing the file there, if any)."""
        if self.records is None:
            return nullcontext()
        return self.change(Change(size, 1) - self._file_at(ns, path))

    def check_writing(self, ns: Any, path: str, size: int) -> None:
        """Refuse now what `writing` would refuse, reserving nothing: a large upload's start asks
        before its bytes are sent, and its commit reserves."""
        if self.records is None:
            return
        delta = Change(size, 1) - self._file_at(ns, path)
        if delta.grows:
            item = self._item()
            used = Change(int(item.get("bytes", 0)), int(item.get("files", 0)))
            self._refuse_if_over(used, delta, self.limits(item))

    def committing(self, ns: Any, path: str, content_hash: str) -> AbstractContextManager[None]:
        """Around committing a pending upload at `path`; its size is the one the upload declared."""
        if self.records is None:
            return nullcontext()
        pending = self.records.get_upload(self.user, content.checked_hash(content_hash)) or {}
        return self.writing(ns, path, int(pending.get("size", 0)))

    def removing(self, ns: Any, path: str) -> AbstractContextManager[None]:
        """Around removing (or replacing by a move) the file at `path`; nothing if there is none."""
        if self.records is None:
            return nullcontext()
        return self.change(-self._file_at(ns, path))

    def removing_tree(self, path: str) -> AbstractContextManager[None]:
        if self.records is None:
            return nullcontext()
        return self.change(-self._tree(path))

    def copying(self, ns: Any, src: str, dst: str) -> AbstractContextManager[None]:
        """Around a copy of `src` (file or tree) onto `dst` (replacing a file there, if any)."""
        if self.records is None:
            return nullcontext()
        return self.change(self._tree(src) - self._file_at(ns, dst))

    def _file_at(self, ns: Any, path: str) -> Change:
        try:
            entry = ns.stat(path)
        except (NotFoundError, BadRequestError):
            return Change()
        return Change(entry.size, 1) if entry.type == "file" else Change()

    @property
    def _table(self) -> Any:
        """The records' table: only a quota that counts (records given) reads or writes it."""
        if self.records is None:
            raise RuntimeError("a quota without records counts nothing")
        return self.records.table

    def _tree(self, path: str) -> Change:
        if self.records is None:
            return Change()
        items = self.records.files_under(self.user, path)
        return Change(sum(int(i.get("size", 0)) for i in items), len(items))

    # --- counting ----------------------------------------------------------------------------
    def give_back(self, delta: Change) -> None:
        """Undo part of a change counted or reserved (a bundle's members that did not commit)."""
        if self.records is not None and delta != Change():
            self._add(-delta)

    @contextmanager
    def change(self, delta: Change) -> Iterator[None]:
        """Reserve growth before the change (refusing it over the limit); count a decrease after it.
        Nothing when the quota counts nothing (`records=None`), as for the other changes."""
        if self.records is None:
            yield
            return
        if delta.grows:
            self._reserve(delta)
            try:
                yield
            except BaseException:
                self._add(-delta)
                raise
            return
        yield
        if delta != Change():
            self._add(delta)

    def _reserve(self, delta: Change) -> None:
        freed = False
        for _ in range(RETRIES):
            item = self._item()
            limits = self.limits(item)
            used = Change(int(item.get("bytes", 0)), int(item.get("files", 0)))
            try:
                self._refuse_if_over(used, delta, limits)
            except QuotaExceeded:
                if freed or self.on_full is None or not self.on_full():
                    raise
                freed = True  # something was taken off the count: read it again, once
                continue
            if self._add(delta, self._fits(delta, limits)):
                return
        raise ConflictError("the quota check kept racing other writes; try again", code="quota-busy")

    @staticmethod
    def _refuse_if_over(used: Change, delta: Change, limits: Limits) -> None:
        for what, have, more, limit in (
            ("bytes", used.bytes, delta.bytes, limits.bytes),
            ("files", used.files, delta.files, limits.files),
        ):
            if limit is not None and more > 0 and have + more > limit:
                raise QuotaExceeded(
                    f"quota exceeded: {have} of {limit} {what} in use and this change adds {more}"
                )

    @staticmethod
    def _fits(delta: Change, limits: Limits) -> Any:
        """The condition that the counter still leaves room for `delta` (None: always)."""
        cond: ConditionBase | None = None
        for name, more, limit in (("bytes", delta.bytes, limits.bytes), ("files", delta.files, limits.files)):
            if limit is not None and more > 0:
                part = Attr(name).not_exists() | Attr(name).lte(limit - more)
                cond = part if cond is None else cond & part
        return cond

    def _add(self, delta: Change, condition: Any = None) -> bool:
        kwargs: dict[str, Any] = {
            "Key": self.key,
            "UpdateExpression": "ADD #b :b, #f :f",
            "ExpressionAttributeNames": {"#b": "bytes", "#f": "files"},
            "ExpressionAttributeValues": {":b": delta.bytes, ":f": delta.files},
        }
        if condition is not None:
            kwargs["ConditionExpression"] = condition
        try:
            self._table.update_item(**kwargs)
        except self._table.meta.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    # --- reading, setting, repairing ---------------------------------------------------------
    def _item(self) -> dict[str, Any]:
        item = self._table.get_item(Key=self.key, ConsistentRead=True).get("Item")
        return _plain(item) if item else {}

    def limits(self, item: dict[str, Any] | None = None) -> Limits:
        item = self._item() if item is None else item
        return Limits(
            _own_limit(item, "quota_bytes", self.defaults.bytes),
            _own_limit(item, "quota_files", self.defaults.files),
        )

    def report(self) -> dict[str, Any]:
        """Use and limits, for the usage report (limit None: unlimited)."""
        item = self._item()
        limits = self.limits(item)
        return {
            "bytes": {"used": int(item.get("bytes", 0)), "limit": limits.bytes},
            "files": {"used": int(item.get("files", 0)), "limit": limits.files},
        }

    def set_limits(self, max_bytes: int | None = None, max_files: int | None = None) -> None:
        """The user's own limits (-1: unlimited); a limit not given is left as it is."""
        updates = {k: v for k, v in (("quota_bytes", max_bytes), ("quota_files", max_files)) if v is not None}
        if any(v < UNLIMITED for v in updates.values()):
            raise BadRequestError("a quota is 0 or more, or -1 for unlimited", code="bad-quota")
        if not updates:
            return
        self._table.update_item(
            Key=self.key,
            UpdateExpression="SET " + ", ".join(f"{k} = :{k}" for k in updates),
            ExpressionAttributeValues={f":{k}": v for k, v in updates.items()},
        )

    def reset_limits(self) -> None:
        """Back to the deployment's defaults."""
        self._table.update_item(Key=self.key, UpdateExpression="REMOVE quota_bytes, quota_files")

    def recount(self) -> Change:
        """Rebuild the counter from the namespace's file records (upkeep's repair after a crash):
        those reachable from its root, so not the trash's (trash_tree took them off the count)."""
        total = self._tree("/")
        self._table.update_item(
            Key=self.key,
            UpdateExpression="SET #b = :b, #f = :f",
            ExpressionAttributeNames={"#b": "bytes", "#f": "files"},
            ExpressionAttributeValues={":b": total.bytes, ":f": total.files},
        )
        return total
