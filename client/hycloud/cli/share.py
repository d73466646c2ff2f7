"""`hycloud share`: public download links to one file, valid until they expire or are revoked."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from hycloud_core import paths
from hycloud_core.errors import BadRequestError
from hycloud_core.share_links import parse_duration

from ..sdk import HyCloud

out = Console()


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _with_url(client: HyCloud, share: dict) -> dict:
    return {**share, "url": client.http.base + share["url_path"]}


def _table(shares: list[dict]) -> Table:
    table = Table(box=None)
    for col in ("id", "path", "state", "expires", "downloads", "url"):
        table.add_column(col, overflow="fold")
    for s in shares:
        table.add_row(s["id"], s["path"], s["state"], _when(s["expires"]), str(s["downloads"]), s["url"])
    return table


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
    from .main import STATE

    if sum(bool(x) for x in (path, revoke, list_all)) != 1:
        raise BadRequestError("give a PATH, --revoke ID or --list", code="bad-usage")
    client = HyCloud.from_config()
    if list_all:
        found = [_with_url(client, s) for s in client.http.json("GET", "/v1/shares")["shares"]]
        _show(STATE["json"], {"shares": found}, _table(found))
    elif revoke:
        done = _with_url(client, client.http.json("DELETE", f"/v1/shares/{revoke}"))
        _show(STATE["json"], done, f"revoked {done['id']} ({done['path']})")
    else:
        body = {"path": paths.normalize(path), "expires_in": parse_duration(expires)}
        made = _with_url(client, client.http.json("POST", "/v1/shares", json=body))
        _show(STATE["json"], made, made["url"])


def _show(as_json: bool, data: dict, human: object) -> None:
    if as_json:
        out.print_json(json.dumps(data))
    else:
        out.print(human, highlight=False, soft_wrap=True)
