"""Which folders a snapshot being made has copied (fs/snapshot_copy.py), one record each.

| record | pk | sk | attributes |
| --- | --- | --- | --- |
| a folder's copy | `SNAPCOPY#<user>#<snapshot id>` | its path within the snapshot ("/": the folder snapshotted) | state, owner, expires, files, bytes |

`copying` is a claim: one copier at a time copies a folder (a claim whose `expires` has passed is
anyone's, and its copy is done again: copying writes the same bytes). `done` says the folder's
own files and subfolders are in the snapshot, as they were at its moment: from then on the
folder may change. `files` and `bytes` are what the folder's own files hold, summed into the
snapshot's totals at the end. The records go once the snapshot is ready, with nobody left to ask.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

from boto3.dynamodb.conditions import Key

from .pages import batch_get, in_rounds, query_items

PREFIX = "SNAPCOPY#"
COPYING, DONE = "copying", "done"
CLAIM_S = 120
ROUND = 25  # deletions a batch


class CopyMarks:
    """The marks of one snapshot being made."""

    def __init__(self, table: Any, user: str, snap_id: str) -> None:
        self.table, self.pk = table, f"{PREFIX}{user}#{snap_id}"
        self.owner = uuid.uuid4().hex
        self._failed = table.meta.client.exceptions.ConditionalCheckFailedException

    def _key(self, rel: str) -> dict[str, str]:
        return {"pk": self.pk, "sk": rel}

    def done(self, rels: list[str]) -> set[str]:
        """Which of `rels` are copied: one batched read."""
        found = batch_get(self.table, [self._key(r) for r in sorted(set(rels))], consistent=True)
        return {str(i["sk"]) for i in found if i.get("state") == DONE}

    def claim(self, rel: str) -> bool:
        """Take the copying of `rel`; False when it is done or another copier holds it."""
        now = int(time.time())
        try:
            self.table.put_item(
                Item={**self._key(rel), "state": COPYING, "owner": self.owner, "expires": now + CLAIM_S},
                ConditionExpression="attribute_not_exists(pk) OR (#s = :copying AND expires < :now)",
                ExpressionAttributeNames={"#s": "state"},
                ExpressionAttributeValues={":copying": COPYING, ":now": now},
            )
            return True
        except self._failed:
            return False

    def renew(self, rel: str) -> None:
        """Keep a long copy's claim (a folder of many files)."""
        self.table.update_item(
            Key=self._key(rel),
            UpdateExpression="SET expires = :e",
            ConditionExpression="#o = :me AND #s = :copying",
            ExpressionAttributeNames={"#o": "owner", "#s": "state"},
            ExpressionAttributeValues={
                ":e": int(time.time()) + CLAIM_S,
                ":me": self.owner,
                ":copying": COPYING,
            },
        )

    def finish(self, rel: str, files: int, nbytes: int) -> None:
        self.table.put_item(Item={**self._key(rel), "state": DONE, "files": files, "bytes": nbytes})

    def give_up(self, rel: str) -> None:
        """Leave a copy begun to the next copier (it is done again from the start)."""
        try:
            self.table.delete_item(
                Key=self._key(rel),
                ConditionExpression="#o = :me AND #s = :copying",
                ExpressionAttributeNames={"#o": "owner", "#s": "state"},
                ExpressionAttributeValues={":me": self.owner, ":copying": COPYING},
            )
        except self._failed:
            pass

    def all(self) -> Iterator[dict[str, Any]]:
        """Every mark, in path order."""
        return query_items(self.table, Key("pk").eq(self.pk), True)

    def drop(self, deadline: float | None) -> bool:
        """Delete every mark, until `deadline`; whether all went."""
        keys = [self._key(str(i["sk"])) for i in self.all()]

        def delete(round_: list[dict[str, str]]) -> None:
            with self.table.batch_writer() as batch:
                for key in round_:
                    batch.delete_item(Key=key)

        return in_rounds(keys, ROUND, deadline, delete)
