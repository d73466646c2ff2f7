"""Large-file objects: content-addressed, immutable S3 keys, reclaimed only by the collector.

No operation deletes content. Linking content at a path *touches* its record (`touched`, and
`gen` + 1), conditioned on the record being `live`; the collector (store/collector.py) removes
an object only when a full mark of every link left it unmarked, it was not touched within the
grace period, and its `gen` is still the one the collector read. A race can therefore delay
reclamation but never remove content a link points to.

Record `OBJ#<hash>`: state (`live` | `deleting`), size, s3_key, created, touched, gen, and
`keep_until` for a version superseded by an overwrite, kept for version-aware deltas.
A version a delta upload made is acknowledged once patched, verified and written to EFS: its
record then has `settling` (when) and no `s3_key` until the settle job has put it in S3
(hycloud_core/fs/settle.py); whoever hands out its S3 key first waits for that (`await_settled`).
Records written before this model (`refs`, state `retained` with `expires`) are read as live;
the first touch makes them so.
"""

from __future__ import annotations

import time
from typing import Any

from ..content import object_key
from ..errors import ConflictError, TryLaterError
from .records import _plain

SETTLE_WAIT_S = 20.0  # the longest a reader waits for a version to reach S3 (under API Gateway's 29 s)
SETTLE_POLL_S = 0.1
RELEASE_SLACK_S = 60  # a version's keep_until is set a moment after its record's expiry is computed
LIVE = ("live", "retained")  # "retained": a record from before the collector, read as live


class ContentGone(ConflictError):
    """The content is being reclaimed (or was never stored): upload it again."""

    code = "upload-required"


class Settling(TryLaterError):
    """The version is durable on EFS but not in S3 yet, longer than a reader waits."""

    code = "settling"
    retry_after = 2  # seconds: a settle of a few hundred MB


class Objects:
    def __init__(self, table: Any, s3: Any, bucket: str) -> None:
        self.table, self.s3, self.bucket = table, s3, bucket
        self._failed = table.meta.client.exceptions.ConditionalCheckFailedException

    @staticmethod
    def _key(content_hash: str) -> dict[str, Any]:
        return {"pk": f"OBJ#{content_hash}", "sk": "OBJ"}

    def get(self, content_hash: str) -> dict[str, Any] | None:
        item = self.table.get_item(Key=self._key(content_hash), ConsistentRead=True).get("Item")
        return _plain(item) if item else None

    def is_stored(self, content_hash: str) -> bool:
        item = self.get(content_hash)
        return bool(item and item.get("state") in LIVE)

    def touch(self, content_hash: str) -> bool:
        """Mark the content as just linked; False when it is absent or being reclaimed."""
        try:
            self.table.update_item(
                Key=self._key(content_hash),
                UpdateExpression="SET touched = :now, gen = if_not_exists(gen, :zero) + :one, #s = :live",
                ConditionExpression="#s IN (:live, :retained)",
                ExpressionAttributeNames={"#s": "state"},
                ExpressionAttributeValues={
                    ":now": int(time.time()),
                    ":zero": 0,
                    ":one": 1,
                    ":live": "live",
                    ":retained": "retained",
                },
            )
            return True
        except self._failed:
            return False

    def require(self, content_hash: str) -> None:
        """Touch, or raise ContentGone."""
        if not self.touch(content_hash):
            raise ContentGone("content was removed concurrently; upload it again")

    def create(self, content_hash: str, size: int, settling: bool = False) -> None:
        """Record freshly stored content (or touch it if a twin was recorded first); `settling`:
        its bytes are on EFS only, until `settled` (no `s3_key` meanwhile, so the standby copies
        the record without the object and the object once it is there)."""
        now = int(time.time())
        where = {"settling": now} if settling else {"s3_key": object_key(content_hash)}
        try:
            self.table.put_item(
                Item={
                    **self._key(content_hash),
                    "state": "live",
                    "size": size,
                    **where,
                    "created": now,
                    "touched": now,
                    "gen": 1,
                },
                ConditionExpression="attribute_not_exists(pk)",
            )
        except self._failed:
            self.require(content_hash)

    def settled(self, content_hash: str) -> None:
        """The settle job put the content in S3: readers may have its key now."""
        try:
            self.table.update_item(
                Key=self._key(content_hash),
                UpdateExpression="SET s3_key = :key REMOVE settling",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeValues={":key": object_key(content_hash)},
            )
        except self._failed:
            pass  # reclaimed meanwhile: nothing links it

    def await_settled(self, content_hash: str, wait_s: float | None = None) -> None:
        """Return once the content is in S3 (at once for content that never settled); Settling
        (503) after `wait_s` (SETTLE_WAIT_S)."""
        deadline = time.monotonic() + (SETTLE_WAIT_S if wait_s is None else wait_s)
        while (item := self.get(content_hash)) and "settling" in item:
            if time.monotonic() >= deadline:
                raise Settling("this version is still on its way to S3; try again in a moment")
            time.sleep(SETTLE_POLL_S)

    def retain(self, content_hash: str, seconds: int) -> None:
        """Keep a superseded version at least `seconds` more, whatever the links say."""
        if seconds <= 0:
            return
        until = int(time.time()) + seconds
        try:
            self.table.update_item(
                Key=self._key(content_hash),
                UpdateExpression="SET keep_until = :until",
                ConditionExpression="attribute_exists(pk) AND (attribute_not_exists(keep_until) OR keep_until < :until)",
                ExpressionAttributeValues={":until": until},
            )
        except self._failed:
            pass  # gone already, or kept longer by someone else

    def release(self, content_hash: str, until: float) -> None:
        """Stop keeping content for a version dropped early (an administrator's shorter retention):
        `keep_until` goes unless something kept it past `until`."""
        try:
            self.table.update_item(
                Key=self._key(content_hash),
                UpdateExpression="REMOVE keep_until",
                ConditionExpression="attribute_exists(pk) AND keep_until <= :until",
                ExpressionAttributeValues={":until": int(until) + RELEASE_SLACK_S},
            )
        except self._failed:
            pass  # gone already, never kept, or kept longer for another version

    def reclaim(self, content_hash: str, gen: int | None, now: float) -> bool:
        """Delete content the collector proved unlinked, if nothing touched it since it looked."""
        gen_cond = "gen = :gen" if gen is not None else "attribute_not_exists(gen)"
        values: dict[str, Any] = {
            ":live": "live",
            ":retained": "retained",
            ":deleting": "deleting",
            ":now": int(now),
        }
        if gen is not None:
            values[":gen"] = gen
        try:
            self.table.update_item(
                Key=self._key(content_hash),
                UpdateExpression="SET #s = :deleting",
                ConditionExpression=f"#s IN (:live, :retained) AND {gen_cond} AND "
                "(attribute_not_exists(keep_until) OR keep_until < :now) AND "
                "(attribute_not_exists(expires) OR expires < :now)",
                ExpressionAttributeNames={"#s": "state"},
                ExpressionAttributeValues=values,
            )
        except self._failed:
            return False
        self.finish_reclaim(content_hash)
        return True

    def finish_reclaim(self, content_hash: str) -> None:
        """Delete the bytes, then the record (also finishes a reclaim a crash interrupted)."""
        self.s3.delete_object(Bucket=self.bucket, Key=object_key(content_hash))
        self.table.delete_item(
            Key=self._key(content_hash),
            ConditionExpression="#s = :deleting",
            ExpressionAttributeNames={"#s": "state"},
            ExpressionAttributeValues={":deleting": "deleting"},
        )
