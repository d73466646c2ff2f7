"""`hycloud versions` and `hycloud restore`: the earlier versions overwrites and deletes kept.

Every command imports this module at start-up, so it loads only Typer and the output helpers;
the client and Rich load inside the commands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from . import targets
from .output import STATE, emit, human_size, iso_time

if TYPE_CHECKING:
    from rich.table import Table

    from ..sdk.client import HyCloud

VERSIONS_EPILOG = (
    "Examples:\n\n  hycloud versions /docs/report.txt\n\n"
    "  hycloud --json versions /docs/report.txt | jq -r '.versions[0].version'"
)
RESTORE_EPILOG = (
    "Examples:\n\n  hycloud restore /docs/report.txt                 # the newest kept version\n\n"
    "  hycloud restore /docs/report.txt --version 1764400000000-0a1b2c3d\n\n"
    "  hycloud restore /docs/report.txt --to /docs/report.old.txt\n\n"
    "  hycloud restore /docs/report.txt --to /archive/      # lands at /archive/report.txt"
)


def _client() -> HyCloud:
    from ..sdk.client import HyCloud  # the client: only when a command runs

    return HyCloud.from_config()


def _table(found: dict, human: bool) -> Table:
    from rich.table import Table

    table = Table(box=None, title=f"Kept versions of {found['path']}, newest first", title_justify="left")
    for name, right in (("version", False), ("replaced", False), ("why", False), ("size", True)):
        table.add_column(name, justify="right" if right else "left", no_wrap=True)
    table.add_column("modified", no_wrap=True)
    table.add_column("content hash", no_wrap=True)
    for v in found["versions"]:
        size = human_size(v["size"]) if human else str(v["size"])
        row = (
            v["version"],
            iso_time(v["at"]),
            v["reason"],
            size,
            iso_time(v["mtime"]),
            v["content_hash"][:16],
        )
        table.add_row(*row)
    return table


def versions_command(
    path: Annotated[str, typer.Argument(metavar="PATH")],
    human: Annotated[
        bool, typer.Option("-h", "--human-readable", help="Sizes as 1.5K, 12M.", metavar="")
    ] = False,
) -> None:
    """List the earlier versions of a file that overwrites and deletes kept, newest first (each
    kept for the deployment's retention, 30 days unless set otherwise)."""
    found = _client().versions(path)
    if STATE["json"] or STATE["quiet"]:
        return emit(found)
    if not found["versions"]:
        return emit(found, f"{found['path']}: no kept versions")
    from .output import stdout_console

    stdout_console().print(_table(found, human))
    current = found.get("current")
    if current is None:
        emit(
            found, f"{found['path']} is deleted now: `hycloud restore {found['path']}` brings the newest back"
        )


def restore_command(
    path: Annotated[str, typer.Argument(metavar="PATH")],
    version: Annotated[
        str | None,
        typer.Option(
            "--version", metavar="V", help="A version from `hycloud versions` (default: the newest)."
        ),
    ] = None,
    to: Annotated[
        str | None,
        typer.Option(
            "--to", metavar="DST", help="Write it there instead (into DST if it ends in / or is a folder)."
        ),
    ] = None,
) -> None:
    """Bring back an earlier version of a file, overwritten or deleted, at PATH or at DST. The
    file it replaces there is kept as a version in turn, so a restore loses nothing."""
    client = _client()
    target = None if to is None else targets.remote(client, targets.basename(path), to)
    done = client.restore(path, version=version, to=target)
    kept = done["restored"]
    emit(
        done,
        f"restored {kept['path']} (version {kept['version']}, {kept['reason']} at {iso_time(kept['at'])})"
        + (f" -> {done['entry']['path']}" if done["entry"]["path"] != kept["path"] else ""),
    )
