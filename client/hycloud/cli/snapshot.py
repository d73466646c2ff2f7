"""`hycloud snapshot create|ls|get|restore|rm`: read-only copies of a folder's tree.

`hycloud snapshot ls` lists the snapshots; `hycloud snapshot ls NAME [PATH]` browses one (paths
within it: "/" is the folder it copied). Every command imports this module at start-up, so it
loads only Typer and the output helpers; the client and Rich load inside the commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .output import STATE, echo, emit, human_size, iso_time, long_listing

if TYPE_CHECKING:
    from rich.table import Table

    from ..sdk.snapshots import Snapshots

snapshot = typer.Typer(
    help="Read-only copies of a folder: make one, browse it, restore it, remove it.",
    no_args_is_help=True,
    epilog=(
        "Examples:\n\n  hycloud snapshot create /photos --name before-cleanup\n\n"
        "  hycloud snapshot ls\n\n"
        "  hycloud snapshot ls before-cleanup /2024\n\n"
        "  hycloud snapshot get before-cleanup /2024/a.jpg ./a.jpg\n\n"
        "  hycloud snapshot restore before-cleanup --to /photos.before\n\n"
        "  hycloud snapshot restore before-cleanup /2024/a.jpg --replace\n\n"
        "  hycloud snapshot rm before-cleanup"
    ),
)
NameArg = Annotated[str, typer.Argument(metavar="NAME", help="A snapshot's name (`hycloud snapshot ls`).")]
Human = Annotated[bool, typer.Option("-h", "--human-readable", help="Sizes as 1.5K, 12M.", metavar="")]


def _snapshots() -> Snapshots:
    from ..sdk.client import HyCloud  # the client: only when a command runs

    return HyCloud.from_config().snapshots


def _table(snaps: list[dict], human: bool) -> Table:
    from rich.table import Table

    table = Table(box=None, title="Snapshots, newest first", title_justify="left")
    for name, right in (("name", False), ("made", False), ("files", True), ("size", True)):
        table.add_column(name, justify="right" if right else "left", no_wrap=True)
    table.add_column("of")
    for s in snaps:
        size = human_size(s["bytes"]) if human else str(s["bytes"])
        made = iso_time(s["at"]) + ("" if s["state"] == "ready" else f" ({s['state']})")
        table.add_row(s["name"], made, str(s["files"]), size, s["path"])
    return table


@snapshot.command("create")
def create(
    path: Annotated[str, typer.Argument(metavar="FOLDER", help="The folder to copy.")],
    name: Annotated[
        str | None,
        typer.Option("--name", "-n", metavar="NAME", help="Unique name; the time (UTC) when absent."),
    ] = None,
) -> None:
    """Keep a folder read-only as it is now (large files are linked, not copied). Its moment is
    at once; a large tree is copied after by a job this follows (writes go on meanwhile)."""
    from .job_progress import following_files

    with following_files() as bar:
        made = _snapshots().create(path, name, progress=bar)
    emit(made, f"snapshot {made['name']} of {made['path']}: {made['files']} files, {made['bytes']} bytes")


@snapshot.command("ls")
def ls(
    name: Annotated[str | None, typer.Argument(metavar="[NAME]", help="Browse this snapshot.")] = None,
    path: Annotated[str, typer.Argument(metavar="[PATH]", help="A folder within it.")] = "/",
    human: Human = False,
) -> None:
    """List the snapshots, or with NAME the entries of a folder in one."""
    snaps = _snapshots()
    if name is not None:
        entries = list(snaps.ls(name, path))
        if STATE["json"] or STATE["quiet"]:
            return emit({"entries": entries})
        for line in long_listing(entries, human):
            echo(line)
        return None
    found = snaps.list()
    if STATE["json"] or STATE["quiet"] or not found["snapshots"]:
        return emit(found, None if found["snapshots"] else "no snapshots")
    from .output import stdout_console

    stdout_console().print(_table(found["snapshots"], human))
    totals = found["totals"]
    emit(found, f"{totals['snapshots']} snapshot(s), {totals['files']} files, {totals['bytes']} bytes")


@snapshot.command("get")
def get(
    name: NameArg,
    path: Annotated[str, typer.Argument(metavar="PATH", help="A file within the snapshot.")],
    local: Annotated[
        Path | None, typer.Argument(metavar="[LOCAL]", help="Where to write it; its name here when absent.")
    ] = None,
) -> None:
    """Download one file as the snapshot holds it."""
    data = _snapshots().get_bytes(name, path)
    target = local or Path(path.rstrip("/").rsplit("/", 1)[-1])
    if target.is_dir():
        target = target / path.rstrip("/").rsplit("/", 1)[-1]
    target.write_bytes(data)
    emit({"path": path, "local": str(target), "size": len(data)}, f"{name}:{path} -> {target}")


@snapshot.command("restore")
def restore(
    name: NameArg,
    path: Annotated[
        str, typer.Argument(metavar="[PATH]", help="Part of it to restore; all when absent.")
    ] = "/",
    to: Annotated[
        str | None, typer.Option("--to", metavar="DST", help="Write it there instead of where it was.")
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Move what is at the destination to the trash first.")
    ] = False,
) -> None:
    """Copy a snapshot (or PATH in it) back; refused when the destination is taken, unless --replace."""
    from .job_progress import following_files

    with following_files() as bar:  # a tree of many entries is restored by a job, followed
        done = _snapshots().restore(name, path, to=to, replace=replace, progress=bar)
    emit(done, f"restored {name}:{path} -> {done['entry']['path']}")


@snapshot.command("rm")
def rm(name: NameArg) -> None:
    """Remove a snapshot for good (content only it kept is then reclaimed)."""
    done = _snapshots().rm(name)
    emit(done, f"removed snapshot {done['removed']['name']}")
