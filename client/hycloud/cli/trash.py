"""`hycloud trash ls|restore|empty`: what `rm` and `rm -r` removed, kept for the trash retention.

Every command imports this module at start-up, so it loads only Typer and the output helpers;
the client and Rich load inside the commands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from .output import STATE, emit, human_size, iso_time

if TYPE_CHECKING:
    from rich.table import Table

    from ..sdk.client import HyCloud

trash = typer.Typer(
    help="What `rm` and `rm -r` removed: list it, put it back, or remove it for good.",
    no_args_is_help=True,
    epilog=(
        "Examples:\n\n  hycloud trash ls\n\n"
        "  hycloud trash restore 1764400000000-0a1b2c3d\n\n"
        "  hycloud trash restore 1764400000000-0a1b2c3d --to /photos.old\n\n"
        "  hycloud trash empty                    # everything, for good"
    ),
)
ItemArg = Annotated[str, typer.Argument(metavar="ITEM", help="An item id from `hycloud trash ls`.")]


def _client() -> HyCloud:
    from ..sdk.client import HyCloud  # the client: only when a command runs

    return HyCloud.from_config()


def _table(items: list[dict], human: bool) -> Table:
    from rich.table import Table

    table = Table(box=None, title="Trash, newest first", title_justify="left")
    for name, right in (
        ("item", False),
        ("removed", False),
        ("type", False),
        ("files", True),
        ("size", True),
    ):
        table.add_column(name, justify="right" if right else "left", no_wrap=True)
    table.add_column("was at")
    for i in items:
        size = human_size(i["size"]) if human else str(i["size"])
        table.add_row(i["item"], iso_time(i["at"]), i["type"], str(i["files"]), size, i["path"])
    return table


@trash.command("ls")
def ls(
    human: Annotated[
        bool, typer.Option("-h", "--human-readable", help="Sizes as 1.5K, 12M.", metavar="")
    ] = False,
) -> None:
    """List what the trash holds; each item is purged once the retention has passed."""
    found = _client().trash()
    if STATE["json"] or STATE["quiet"]:
        return emit(found)
    days = found["retention_s"] / 86400
    if not found["items"]:
        return emit(found, f"the trash is empty (items are kept {days:g} days)")
    from .output import stdout_console

    stdout_console().print(_table(found["items"], human))
    emit(found, f"kept {days:g} days, then purged")


@trash.command("restore")
def restore(
    item: ItemArg,
    to: Annotated[
        str | None,
        typer.Option("--to", metavar="DST", help="Put it there instead of where it was."),
    ] = None,
) -> None:
    """Put an item back where it was (refused when something is there now: give --to)."""
    done = _client().trash_restore(item, to=to)
    was, now = done["restored"]["path"], done["entry"]["path"]
    emit(done, f"restored {was}" + (f" -> {now}" if now != was else ""))


@trash.command("empty")
def empty(
    item: Annotated[str | None, typer.Argument(metavar="[ITEM]", help="One item; all when absent.")] = None,
) -> None:
    """Remove one item, or everything in the trash, for good."""
    from .job_progress import following_files

    with following_files() as bar:  # what items of many files hold goes by a job it follows
        done = _client().trash_empty(item, progress=bar)
    emit(done, f"removed {len(done['emptied'])} item(s) for good")
