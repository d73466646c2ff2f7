"""Large-file objects: content-addressed, immutable S3 keys with a reference count in DynamoDB.

Life of an object record (`OBJ#<hash>`): `live` with refs ≥ 1 → refs reaches 0 → `deleting`
(conditional, so it happens once) → S3 object deleted → record deleted. A commit that wants to
share existing content increments refs only while the record is `live` (or `retained`); if it
finds the object `deleting` or gone it must upload the content again. So a delete racing a
commit of the same content can never remove bytes that a new reference points to.

A version superseded by an overwrite is not deleted at once but `retained` until `expires`, so
a client holding it can still get a version-aware delta against it; the upkeep function purges
expired ones. Explicit deletes remove content at once.
"""

from __future__ import annotations

import time
from typing import Any

from ..content import object_key
from .records import _plain


class Objects:
    def __init__(self, table: Any, s3: Any, bucket: str) -> None:
        self.table, self.s3, self.bucket = table, s3, bucket
        self._failed = table.meta.client.exceptions.ConditionalCheckFailedException

    @staticmethod
    def _key(content_hash: str) -> dict:
        return {"pk": f"OBJ#{content_hash}", "sk": "OBJ"}

    def get(self, content_hash: str) -> dict | None:
        item = self.table.get_item(Key=self._key(content_hash), ConsistentRead=True).get("Item")
        return _plain(item) if item else None

    def is_stored(self, content_hash: str) -> bool:
        """True when the content is in S3 and may be referenced again (live or retained)."""
        item = self.get(content_hash)
        return bool(item and item.get("state") in ("live", "retained"))

    def add_ref(self, content_hash: str) -> bool:
        """Take one more reference to stored content; False when it is absent or being deleted."""
        try:
            self.table.update_item(
                Key=self._key(content_hash),
                UpdateExpression="SET refs = refs + :one, #s = :live REMOVE expires",
                ConditionExpression="#s IN (:live, :retained)",
                ExpressionAttributeNames={"#s": "state"},
                ExpressionAttributeValues={":one": 1, ":live": "live", ":retained": "retained"},
            )
            return True
        except self._failed:
            return False

    def create(self, content_hash: str, size: int) -> None:
        """Record freshly uploaded content with its first reference (or share it if a twin won the race)."""
        try:
            self.table.put_item(
                Item={
                    **self._key(content_hash),
                    "state": "live",
                    "refs": 1,
                    "size": size,
                    "s3_key": object_key(content_hash),
                    "created": int(time.time()),
                },
                ConditionExpression="attribute_not_exists(pk)",
            )
        except self._failed:
            if not self.add_ref(content_hash):
                raise

    def drop_ref(self, content_hash: str, retain_s: int = 0) -> bool:
        """Release one reference. With the last, delete the content, or with `retain_s` keep it that
        long as an old version. True when the content was removed."""
        result = self.table.update_item(
            Key=self._key(content_hash),
            UpdateExpression="SET refs = refs - :one",
            ConditionExpression="refs > :zero",
            ExpressionAttributeValues={":one": 1, ":zero": 0},
            ReturnValues="UPDATED_NEW",
        )
        if int(result["Attributes"]["refs"]) > 0:
            return False
        if retain_s > 0:
            try:
                self.table.update_item(
                    Key=self._key(content_hash),
                    UpdateExpression="SET #s = :retained, expires = :expires",
                    ConditionExpression="refs = :zero AND #s = :live",
                    ExpressionAttributeNames={"#s": "state"},
                    ExpressionAttributeValues={
                        ":zero": 0,
                        ":live": "live",
                        ":retained": "retained",
                        ":expires": int(time.time()) + retain_s,
                    },
                )
            except self._failed:
                pass
            return False
        return self._delete(content_hash, "live")

    def _delete(self, content_hash: str, from_state: str) -> bool:
        try:
            self.table.update_item(
                Key=self._key(content_hash),
                UpdateExpression="SET #s = :deleting",
                ConditionExpression="refs = :zero AND #s = :from",
                ExpressionAttributeNames={"#s": "state"},
                ExpressionAttributeValues={":zero": 0, ":from": from_state, ":deleting": "deleting"},
            )
        except self._failed:
            return False
        self.s3.delete_object(Bucket=self.bucket, Key=object_key(content_hash))
        self.table.delete_item(
            Key=self._key(content_hash),
            ConditionExpression="#s = :deleting",
            ExpressionAttributeNames={"#s": "state"},
            ExpressionAttributeValues={":deleting": "deleting"},
        )
        return True

    def purge_expired(self, now: float | None = None) -> list[str]:
        """Delete retained old versions whose window has passed (run by the upkeep function)."""
        now = int(time.time() if now is None else now)
        purged, kwargs = (
            [],
            {
                "FilterExpression": "#s = :retained AND expires < :now",
                "ExpressionAttributeNames": {"#s": "state"},
                "ExpressionAttributeValues": {":retained": "retained", ":now": now},
            },
        )
        while True:
            page = self.table.scan(**kwargs)
            for item in page["Items"]:
                content_hash = item["pk"].removeprefix("OBJ#")
                if self._delete(content_hash, "retained"):
                    purged.append(content_hash)
            if "LastEvaluatedKey" not in page:
                return purged
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
