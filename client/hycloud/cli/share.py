"""`hycloud share`: public download links to one file, valid until they expire or are revoked."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from hycloud_core import paths
from hycloud_core.errors import BadRequestError
from hycloud_core.share_links import parse_duration

from .output import emit, iso_time

if TYPE_CHECKING:
    from ..sdk.client import HyCloud


def _with_url(client: HyCloud, share: dict) -> dict:
    return {**share, "url": client.http.base + share["url_path"]}


def _lines(shares: list[dict]) -> str:
    """One tab-separated line per link, whole, whatever the terminal (as `ls -l` prints)."""
    rows = [("id", "path", "state", "expires", "downloads", "url")]
    rows += [
        (s["id"], s["path"], s["state"], iso_time(s["expires"]), str(s["downloads"]), s["url"])
        for s in shares
    ]
    return "\n".join("\t".join(row) for row in rows)


def share_command(
    path: Annotated[str | None, typer.Argument(help="File to share.")] = None,
    expires: Annotated[
        str, typer.Option("--expires", "-e", help="Lifetime: 30m, 12h, 1d, 2w (max 30d).")
    ] = "1d",
    revoke: Annotated[str | None, typer.Option("--revoke", help="Revoke the share with this id.")] = None,
    list_all: Annotated[bool, typer.Option("--list", "-l", help="List your share links.")] = False,
) -> None:
    """Make a link anyone can download PATH from, without a key, until it expires or is revoked.

    Examples: `hycloud share /docs/report.pdf --expires 2h`, `hycloud share --list`,
    `hycloud share --revoke ID`. The link serves the file's current content.
    """
    if sum(bool(x) for x in (path, revoke, list_all)) != 1:
        raise BadRequestError("give a PATH, --revoke ID or --list", code="bad-usage")
    from ..sdk.client import HyCloud  # here: the client loads only when a command runs

    client = HyCloud.from_config()
    if list_all:
        found = [_with_url(client, s) for s in client.http.json("GET", "/v1/shares")["shares"]]
        emit({"shares": found}, _lines(found))
    elif revoke:
        done = _with_url(client, client.http.json("DELETE", f"/v1/shares/{revoke}"))
        emit(done, f"revoked {done['id']} ({done['path']})")
    else:
        assert path is not None  # one of the three, checked above
        body = {"path": paths.normalize(path), "expires_in": parse_duration(expires)}
        made = _with_url(client, client.http.json("POST", "/v1/shares", json=body))
        emit(made, made["url"])
