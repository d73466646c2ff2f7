"""Share links: an unguessable token that lets anyone download one file until it expires or is revoked.

A share follows the *path*, not a version: whoever opens the link gets the file's current
content (what people expect of a Dropbox or Drive link), and the content hash at share time is
kept only to show what was shared. A file moved or deleted makes the link answer 404.

| record | pk | sk | attributes |
| --- | --- | --- | --- |
| share | `SHARE#<token>` | `SHARE` | user (internal id), path, content_hash, created, expires, revoked, downloads, bytes_served |
| a user's shares | `SHARES#<user id>` | `S#<token>` | created (the list of the user's tokens) |
| bytes served | `SHARES#<user id>` | `SERVED` | downloads, bytes_served: every share download, counted in usage |

Both share items carry `expiration` (the table's TTL) a month after the share expires, so the
table forgets old shares by itself; until then an expired or revoked token answers 410.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import Any

from boto3.dynamodb.conditions import Key

from ..errors import HyCloudError, NotFoundError
from ..share_links import checked_expiry, checked_token
from .records import _plain, query_all

FORGET_AFTER_S = 30 * 86400


class GoneError(HyCloudError):
    status, code = 410, "share-gone"


@dataclass(frozen=True)
class Share:
    id: str
    user: str
    path: str
    content_hash: str
    created: float
    expires: float
    revoked: float | None = None
    downloads: int = 0
    bytes_served: int = 0

    def to_dict(self) -> dict[str, Any]:
        body = {k: v for k, v in asdict(self).items() if k != "user" and v is not None}
        return {**body, "state": self.state(), "url_path": f"/v1/shared/{self.id}"}

    def state(self, now: float | None = None) -> str:
        if self.revoked is not None:
            return "revoked"
        return "expired" if (now or time.time()) >= self.expires else "active"


class Shares:
    def __init__(self, table: Any) -> None:
        self.table = table

    def create(self, user: str, path: str, content_hash: str, expires_in: int) -> Share:
        now = time.time()
        share = Share(
            id=secrets.token_urlsafe(24),
            user=user,
            path=path,
            content_hash=content_hash,
            created=now,
            expires=now + checked_expiry(expires_in),
        )
        forget = int(share.expires + FORGET_AFTER_S)
        item = {k: v for k, v in asdict(share).items() if v is not None and k != "id"}
        self.table.meta.client.transact_write_items(
            TransactItems=[
                _put(
                    self.table,
                    {"pk": f"SHARE#{share.id}", "sk": "SHARE", **_decimals(item), "expiration": forget},
                ),
                _put(
                    self.table,
                    {
                        "pk": f"SHARES#{user}",
                        "sk": f"S#{share.id}",
                        "created": _dec(now),
                        "expiration": forget,
                    },
                ),
            ]
        )
        return share

    def get(self, token: str) -> Share:
        """The share a token names, or 404 (unknown) / 410 (expired, revoked, or its owner
        disabled or deleted: a link must not outlive its owner's right to read the file)."""
        share = self._load(checked_token(token))
        if share is None:
            raise NotFoundError("no such share link", code="no-such-share")
        state = share.state()
        if state != "active":
            raise GoneError(f"this share link has {'been revoked' if state == 'revoked' else 'expired'}")
        if not self._owner_active(share.user):
            raise GoneError("the owner of this share link is disabled or deleted")
        return share

    def _owner_active(self, uid: str) -> bool:
        ident = self.table.get_item(Key={"pk": f"USERID#{uid}", "sk": "ID"}, ConsistentRead=True).get("Item")
        if not ident or ident.get("state") != "active":
            return False
        profile = self.table.get_item(
            Key={"pk": f"USER#{ident['name']}", "sk": "PROFILE"}, ConsistentRead=True
        )
        item = profile.get("Item")
        return bool(item) and item.get("id") == uid and not item.get("disabled")

    def owned(self, user: str, token: str) -> Share:
        share = self._load(checked_token(token))
        if share is None or share.user != user:
            raise NotFoundError("no such share link", code="no-such-share")
        return share

    def revoke(self, user: str, token: str) -> Share:
        share = self.owned(user, token)
        if share.revoked is None:
            self.table.update_item(
                Key={"pk": f"SHARE#{token}", "sk": "SHARE"},
                UpdateExpression="SET revoked = :now",
                ConditionExpression="attribute_not_exists(revoked)",
                ExpressionAttributeValues={":now": _dec(time.time())},
            )
        return self.owned(user, token)

    def list(self, user: str) -> list[Share]:
        index = query_all(self.table, Key("pk").eq(f"SHARES#{user}") & Key("sk").begins_with("S#"))
        tokens = [item["sk"][2:] for item in index]
        found = [self._load(t) for t in tokens]
        return sorted((s for s in found if s is not None), key=lambda s: s.created)

    def count_download(self, share: Share, size: int) -> None:
        """Add a download to the share and to its owner's bytes served (shown in usage)."""
        add = "ADD downloads :one, bytes_served :n"
        values = {":one": 1, ":n": size}
        self.table.update_item(
            Key={"pk": f"SHARE#{share.id}", "sk": "SHARE"},
            UpdateExpression=add,
            ExpressionAttributeValues=values,
        )
        self.table.update_item(
            Key={"pk": f"SHARES#{share.user}", "sk": "SERVED"},
            UpdateExpression=add,
            ExpressionAttributeValues=values,
        )

    def served(self, user: str) -> dict[str, int]:
        item = self.table.get_item(Key={"pk": f"SHARES#{user}", "sk": "SERVED"}).get("Item") or {}
        return {"downloads": int(item.get("downloads", 0)), "bytes_served": int(item.get("bytes_served", 0))}

    def _load(self, token: str) -> Share | None:
        item = self.table.get_item(Key={"pk": f"SHARE#{token}", "sk": "SHARE"}, ConsistentRead=True).get(
            "Item"
        )
        if not item:
            return None
        item = _plain(item)
        fields = {k: item[k] for k in Share.__dataclass_fields__ if k in item and k != "id"}
        return Share(id=token, **fields)


def _dec(x: float) -> Decimal:
    return Decimal(str(round(x, 3)))


def _decimals(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _dec(v) if isinstance(v, float) else v for k, v in item.items()}


def _put(table: Any, item: dict[str, Any]) -> dict[str, Any]:
    """A transaction's Put: the resource's client serializes plain values itself."""
    return {"Put": {"TableName": table.name, "Item": item}}
