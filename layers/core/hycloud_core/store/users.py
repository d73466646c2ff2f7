"""Users and their API keys, in the single table.

| record | pk | sk | attributes |
| --- | --- | --- | --- |
| user profile | `USER#<name>` | `PROFILE` | id, created, disabled, quota_bytes, quota_files, rate_per_s, burst, max_jobs |
| a user's key (for listing) | `USER#<name>` | `KEY#<key id>` | uid, created, read_only, expires |
| API key | `KEY#<key id>` | `KEY` | user (name), uid, secret_hash, created, read_only, expires |
| user id | `USERID#<id>` | `ID` | name, state (active, deleted), created, deleted |

A key names the user *and* the id it was made for, and is accepted only while that user's
profile exists with that id and is enabled: removing a profile, by `delete` or by hand, revokes
all its keys, and a new user of the same name never inherits them. Deleting a user leaves its
`USERID#` record as a tombstone, so the id is never given again. Profiles and keys made before
ids existed carry none; their id is the user's name.
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

from boto3.dynamodb.conditions import Attr, ConditionBase, Key

from .. import auth
from ..errors import ConflictError, ForbiddenError, NotFoundError
from .dir_index import LAYOUT_SK, LAYOUT_VERSION
from .merkle_records import LAYOUT_VERSION as MERKLE_LAYOUT
from .records import Records, _plain, query_all

LIMIT_FIELDS = ("rate_per_s", "burst", "max_jobs")  # a user's own fair-use limits (control/limits.py)


def user_id(profile: dict[str, Any]) -> str:
    """A profile's internal id; a profile from before ids keeps its name as its id."""
    uid: str = profile.get("id") or profile["pk"].removeprefix("USER#")
    return uid


def _key_public(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "key_id": item["sk"].removeprefix("KEY#"),
        "created": item.get("created"),
        "read_only": bool(item.get("read_only", False)),
        "expires": item.get("expires"),
    }


class Users:
    """User and key records of one table (a boto3 `Table`)."""

    def __init__(self, table: Any) -> None:
        self.table = table
        self.client = table.meta.client

    # --- reading ---------------------------------------------------------------------------------
    def profile(self, name: str) -> dict[str, Any] | None:
        item = self.table.get_item(Key={"pk": f"USER#{name}", "sk": "PROFILE"}, ConsistentRead=True).get(
            "Item"
        )
        return _plain(item) if item else None

    def require(self, name: str) -> dict[str, Any]:
        profile = self.profile(name)
        if profile is None:
            raise NotFoundError(f"no user {name}", code="no-such-user")
        return profile

    def keys(self, name: str) -> list[dict[str, Any]]:
        """The user's keys (ids and flags, never secrets)."""
        uid = user_id(self.require(name))
        items = self._query(Key("pk").eq(f"USER#{name}") & Key("sk").begins_with("KEY#"))
        return [_key_public(i) for i in items if i.get("uid", name) == uid]

    def file_count(self, uid: str) -> int:
        """How many file records the namespace of `uid` holds (its trash not counted)."""
        return len(Records.over(self.table).files_under(uid, "/"))

    def _query(self, cond: ConditionBase) -> list[dict[str, Any]]:
        return query_all(self.table, cond, consistent=True)

    # --- authentication --------------------------------------------------------------------------
    def identify(self, token: str | None, now: float | None = None) -> auth.Identity:
        """The identity a presented key acts as; 401/403 when it is malformed, unknown, or its user is gone."""
        return self.identify_with_profile(token, now)[0]

    def identify_with_profile(
        self, token: str | None, now: float | None = None
    ) -> tuple[auth.Identity, dict[str, Any]]:
        """`identify`, and the profile it read (the user's own limits), so a request reads it once."""
        key_id, secret = auth.parse_token(token)
        item = self.table.get_item(Key={"pk": f"KEY#{key_id}", "sk": "KEY"}, ConsistentRead=True).get("Item")
        if not item or not auth.secret_matches(secret, item["secret_hash"]):
            raise ForbiddenError("API key not recognised", code="invalid-key")
        key = _plain(item)
        if key.get("expires") is not None and key["expires"] <= (now or time.time()):
            raise ForbiddenError("API key has expired", code="invalid-key")
        profile = self.profile(key["user"])
        uid = key.get("uid") or key["user"]
        if profile is None or user_id(profile) != uid:
            raise ForbiddenError("API key not recognised", code="invalid-key")
        if profile.get("disabled"):
            raise ForbiddenError(f"user {key['user']} is disabled", code="user-disabled")
        return auth.Identity(key["user"], uid, key_id, bool(key.get("read_only", False))), profile

    # --- changes ---------------------------------------------------------------------------------
    def create(self, name: str, key: auth.NewKey, read_only: bool = False) -> str:
        """Create a user with a fresh id and its first key; return the id."""
        uid, now = auth.new_user_id(), int(time.time())
        profile = {"pk": f"USER#{name}", "sk": "PROFILE", "id": uid, "created": now, "disabled": False}
        id_record = {"pk": f"USERID#{uid}", "sk": "ID", "name": name, "state": "active", "created": now}
        layout = {"pk": f"NS#{uid}", "sk": LAYOUT_SK, "version": LAYOUT_VERSION}  # new: nothing to migrate
        tree_layout = {"pk": f"MK#{uid}", "sk": LAYOUT_SK, "version": MERKLE_LAYOUT}
        try:
            self._transact(
                [
                    {"Put": {"Item": profile, "ConditionExpression": "attribute_not_exists(pk)"}},
                    {"Put": {"Item": id_record, "ConditionExpression": "attribute_not_exists(pk)"}},
                    {"Put": {"Item": layout}},
                    {"Put": {"Item": tree_layout}},
                    *self._key_puts(name, uid, key, read_only),
                ]
            )
        except self.client.exceptions.TransactionCanceledException:
            if self.profile(name) is not None:
                raise ConflictError(f"user {name} already exists", code="user-exists") from None
            raise
        return uid

    def add_key(self, name: str, key: auth.NewKey, read_only: bool = False) -> None:
        """Add a key; refused if the user is deleted meanwhile (no key without a profile)."""
        uid = user_id(self.require(name))
        check = {
            "ConditionCheck": {
                "Key": {"pk": f"USER#{name}", "sk": "PROFILE"},
                "ConditionExpression": "attribute_exists(pk)",
            }
        }
        try:
            self._transact([check, *self._key_puts(name, uid, key, read_only)])
        except self.client.exceptions.TransactionCanceledException:
            raise NotFoundError(f"no user {name}", code="no-such-user") from None

    def revoke(self, key_id: str) -> str:
        """Delete a key at once; return the name of the user it belonged to."""
        item = self.table.get_item(Key={"pk": f"KEY#{key_id}", "sk": "KEY"}, ConsistentRead=True).get("Item")
        if not item:
            raise NotFoundError(f"no key {key_id}", code="no-such-key")
        self._transact(
            [
                {"Delete": {"Key": {"pk": f"KEY#{key_id}", "sk": "KEY"}}},
                {"Delete": {"Key": {"pk": f"USER#{item['user']}", "sk": f"KEY#{key_id}"}}},
            ]
        )
        user: str = item["user"]
        return user

    def rotate(self, name: str, key: auth.NewKey, grace_s: int = 0, read_only: bool = False) -> list[str]:
        """Add `key` and retire every other key of the user, at once or after `grace_s` seconds."""
        old = self.keys(name)
        self.add_key(name, key, read_only)
        until = int(time.time()) + grace_s
        for k in old:
            if grace_s <= 0:
                self.revoke(k["key_id"])
            elif k["expires"] is None or k["expires"] > until:
                self._expire(name, k["key_id"], until)
        return [k["key_id"] for k in old]

    def set_disabled(self, name: str, disabled: bool) -> None:
        try:
            self.table.update_item(
                Key={"pk": f"USER#{name}", "sk": "PROFILE"},
                UpdateExpression="SET disabled = :d",
                ConditionExpression=Attr("pk").exists(),
                ExpressionAttributeValues={":d": disabled},
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            raise NotFoundError(f"no user {name}", code="no-such-user") from None

    def set_limits(self, name: str, **limits: float | None) -> dict[str, Any]:
        """Set the user's own fair-use limits (`rate_per_s`, `burst`, `max_jobs`; 0: unlimited);
        None removes one, so the deployment's applies again. Returns the profile's limits."""
        unknown = set(limits) - set(LIMIT_FIELDS)
        if unknown:
            raise ValueError(f"unknown limits: {sorted(unknown)}")
        sets = {k: v for k, v in limits.items() if v is not None}
        removes = [k for k, v in limits.items() if v is None]
        parts = (["SET " + ", ".join(f"#{k} = :{k}" for k in sets)] if sets else []) + (
            ["REMOVE " + ", ".join(f"#{k}" for k in removes)] if removes else []
        )
        if not parts:
            return {k: v for k, v in self.require(name).items() if k in LIMIT_FIELDS}
        update: dict[str, Any] = {
            "Key": {"pk": f"USER#{name}", "sk": "PROFILE"},
            "UpdateExpression": " ".join(parts),
            "ConditionExpression": Attr("pk").exists(),
            "ExpressionAttributeNames": {f"#{k}": k for k in limits},
            "ReturnValues": "ALL_NEW",
        }
        if sets:
            update["ExpressionAttributeValues"] = {f":{k}": Decimal(str(v)) for k, v in sets.items()}
        try:
            answer = self.table.update_item(**update)
        except self.client.exceptions.ConditionalCheckFailedException:
            raise NotFoundError(f"no user {name}", code="no-such-user") from None
        return {k: v for k, v in _plain(answer["Attributes"]).items() if k in LIMIT_FIELDS}

    def delete(self, name: str) -> str:
        """Delete a user whose namespace holds no files: profile and keys go, the id stays as a tombstone.

        The user is disabled while its files are counted, so no request of theirs starts meanwhile.
        """
        profile = self.require(name)
        uid = user_id(profile)
        self.set_disabled(name, True)
        files = self.file_count(uid)
        if files:
            self.set_disabled(name, bool(profile.get("disabled", False)))
            raise ConflictError(
                f"user {name} still has {files} files; remove them before deleting the user",
                code="user-has-files",
            )
        keys = self.keys(name)
        self._tombstone(name, uid)
        with self.table.batch_writer() as batch:
            for k in keys:
                batch.delete_item(Key={"pk": f"KEY#{k['key_id']}", "sk": "KEY"})
                batch.delete_item(Key={"pk": f"USER#{name}", "sk": f"KEY#{k['key_id']}"})
        return uid

    def _tombstone(self, name: str, uid: str) -> None:
        tombstone = {
            "pk": f"USERID#{uid}",
            "sk": "ID",
            "name": name,
            "state": "deleted",
            "deleted": int(time.time()),
        }
        self._transact(
            [
                {
                    "Delete": {
                        "Key": {"pk": f"USER#{name}", "sk": "PROFILE"},
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                },
                {"Put": {"Item": tombstone}},
            ]
        )

    def _expire(self, name: str, key_id: str, until: int) -> None:
        for pk, sk in ((f"KEY#{key_id}", "KEY"), (f"USER#{name}", f"KEY#{key_id}")):
            try:
                self.table.update_item(
                    Key={"pk": pk, "sk": sk},
                    UpdateExpression="SET expires = :t",
                    ConditionExpression=Attr("pk").exists(),
                    ExpressionAttributeValues={":t": until},
                )
            except self.client.exceptions.ConditionalCheckFailedException:
                pass  # revoked meanwhile

    def _key_puts(self, name: str, uid: str, key: auth.NewKey, read_only: bool) -> list[dict[str, Any]]:
        flags = {"uid": uid, "created": int(time.time()), "read_only": read_only}
        record = {
            "pk": f"KEY#{key.key_id}",
            "sk": "KEY",
            "user": name,
            "secret_hash": key.secret_hash,
            **flags,
        }
        listed = {"pk": f"USER#{name}", "sk": f"KEY#{key.key_id}", **flags}
        return [
            {"Put": {"Item": record, "ConditionExpression": "attribute_not_exists(pk)"}},
            {"Put": {"Item": listed}},
        ]

    def _transact(self, actions: list[dict[str, Any]]) -> None:
        name = self.table.name
        self.client.transact_write_items(
            TransactItems=[{kind: {"TableName": name, **body}} for a in actions for kind, body in a.items()]
        )
