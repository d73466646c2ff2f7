"""Who may be given a key slot: a user the deployment knows (`GET /v1/users/<name>`)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from hycloud_core.errors import NotFoundError

if TYPE_CHECKING:
    from ..sdk.client import HyCloud


def require_user(client: HyCloud, name: str) -> None:
    """Refuse (NotFoundError `no-such-user`, exit 5) a name no enabled user of the deployment has,
    before any secret is asked for or any slot written."""
    try:
        client.http.json("GET", f"/v1/users/{quote(name, safe='')}")
    except NotFoundError as err:
        raise NotFoundError(
            f"no user {name} in this deployment: a key slot is only given to a known user",
            code="no-such-user",
        ) from err
