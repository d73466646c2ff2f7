"""`hycloud sync SRC DST`: make DST like SRC, one of them a cloud folder written `hc:/path`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from hycloud_core.errors import BadRequestError

from . import exit_codes
from .output import STATE, emit, note

REMOTE_PREFIX = "hc:"
EPILOG = """Examples:

  hycloud sync ./site hc:/www                 # upload what changed in ./site to /www

  hycloud sync hc:/www ./site --delete        # download what changed; delete what /www no longer has

  hycloud sync ./src hc:/src --exclude '*.o' --exclude build/ --include keep.o

  hycloud sync ./docs hc:/docs --dry-run      # list what would be done

  hycloud --json sync ./docs hc:/docs | jq .rounds

  hycloud sync --watch ./notes hc:/notes      # then send each local change as it happens
"""

VERBS = {"push": ("upload", "uploaded"), "pull": ("download", "downloaded")}


def split_ends(src: str, dst: str) -> tuple[Literal["push", "pull"], Path, str]:
    """(direction, local folder, remote folder) from SRC and DST, exactly one of them `hc:`."""
    src_remote, dst_remote = src.startswith(REMOTE_PREFIX), dst.startswith(REMOTE_PREFIX)
    if src_remote == dst_remote:
        raise BadRequestError(
            "one of SRC and DST must be a cloud folder (hc:/path) and the other a local folder",
            code="bad-usage",
        )
    if dst_remote:
        return "push", Path(src), dst[len(REMOTE_PREFIX) :] or "/"
    return "pull", Path(dst), src[len(REMOTE_PREFIX) :] or "/"


def sync_command(
    src: Annotated[str, typer.Argument(metavar="SRC", help="Local folder, or cloud folder as hc:/path.")],
    dst: Annotated[str, typer.Argument(metavar="DST", help="Local folder, or cloud folder as hc:/path.")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", "-n", help="List what would be done; change nothing.")
    ] = False,
    delete: Annotated[bool, typer.Option("--delete", help="Delete at DST what SRC no longer has.")] = False,
    exclude: Annotated[
        list[str] | None,
        typer.Option("--exclude", metavar="GLOB", help="Leave out paths matching (gitignore-style)."),
    ] = None,
    include: Annotated[
        list[str] | None,
        typer.Option("--include", metavar="GLOB", help="Keep paths matching, though excluded."),
    ] = None,
    watch: Annotated[
        bool, typer.Option("--watch", "-w", help="After syncing, keep sending local changes (until Ctrl-C).")
    ] = False,
    watch_for: Annotated[
        float | None, typer.Option("--watch-for", metavar="SECONDS", help="With --watch: stop after SECONDS.")
    ] = None,
    checksum: Annotated[
        bool,
        typer.Option(
            "--checksum", "-c", help="Hash every local file, not only those whose mtime or size changed."
        ),
    ] = False,
    rescan: Annotated[
        bool,
        typer.Option(
            "--rescan",
            help="List every local folder again, trusting no scan journal (files still read only if changed).",
        ),
    ] = False,
) -> None:
    """Make DST like SRC, sending only what differs (found by comparing Merkle hashes).

    Changes made at DST since the last sync are never overwritten: a file changed on both sides
    keeps the newer (by mtime) and the other beside it as NAME.conflict-DEVICE-TIME, on both
    sides, so the next sync has nothing more to say about it."""
    from ..sdk.client import HyCloud  # here: the client and the sync engine load only for `sync`
    from ..sync import SyncOptions, sync
    from ..sync.filters import PathFilter
    from ..sync.progress import SyncProgress
    from ..sync.watch import flush_held
    from ..sync.watch import watch as watch_changes
    from .encrypted import routed_sync

    direction, local, remote = split_ends(src, dst)
    if (watch or watch_for is not None) and (direction != "push" or dry_run):
        raise BadRequestError(
            "--watch sends local changes: SRC local, DST hc:/path, no --dry-run", code="bad-usage"
        )
    options = SyncOptions(
        dry_run, delete, tuple(exclude or ()), tuple(include or ()), checksum, rescan=rescan
    )
    client = HyCloud.from_config()
    watching = watch or watch_for is not None
    sealed_keep = PathFilter.of(options.exclude, options.include) if exclude else None
    if routed_sync(client, direction, local, remote, options.delete, sealed_keep, dry_run, watching):
        return  # an encrypted folder: sealed and checked on this machine (cli/encrypted.py)
    if watch or watch_for is not None:
        flush_held(client, local, remote)
    bars = not STATE["quiet"] and (STATE["progress"] or (not STATE["json"] and sys.stderr.isatty()))
    report = sync(client, local, remote, direction, options, SyncProgress(bars), _each_file)
    if not (watch or watch_for is not None):
        emit(report, "\n".join(human_lines(report, src, dst)))
        return finish(report)
    if not STATE["json"]:
        emit(report, "\n".join(human_lines(report, src, dst)))
    keep = PathFilter.of(options.exclude, options.include)
    watched = watch_changes(
        client,
        local,
        remote,
        keep,
        watch_for,
        on_sent=_sent,
        ready=lambda: note(f"watching {local}; Ctrl-C to stop"),
    )
    emit({**report, "watch": watched}, watch_line(watched))
    finish({**report, "failed": report["failed"] + watched["failed"]})


def _sent(op) -> None:
    if STATE["verbose"]:
        note(f"sent {op.kind.value} {op.path}")


def watch_line(watched: dict) -> str:
    return (
        f"watch: sent {len(watched['sent'])} operations, {watched['eliminated']} merged away, "
        f"{len(watched['held'])} still queued (sent on the next run)"
    )


def _each_file(what: str, rel: str) -> None:
    if STATE["verbose"]:
        note(f"{what} {rel}")


def human_lines(report: dict, src: str, dst: str) -> list[str]:
    verb, done = VERBS[report["direction"]]
    would = report["dry_run"]
    lines = [f"would {verb} {rel}" for rel in report["copied"]] if would else []
    lines += [f"{'would move' if would else 'moved'} {m['from']} -> {m['to']}" for m in report["moved"]]
    lines += [f"{'would delete' if would else 'deleted'} {rel}" for rel in report["deleted"]]
    lines += [_conflict_line(c, report["direction"], would) for c in report["conflicts"]]
    lines += [f"kept {rel}: changed at the destination since the last sync" for rel in report["kept"]]
    if report["not_deleted"]:
        lines.append(f"{len(report['not_deleted'])} files gone from the source not deleted (use --delete)")
    lines += [f"failed {f['path']}: {f['error']}" for f in report["failed"]]
    lines += [f"skipped {rel}: a file on one side, a folder on the other" for rel in report["clashes"]]
    head = f"would {verb}" if would else done
    files = f"{report['files']} file" + ("" if report["files"] == 1 else "s")
    lines.append(
        f"{head} {files} ({report['bytes']:,} bytes) from {src} to {dst}; "
        f"{report['rounds']} exchange rounds, {report['seconds']:.1f} s"
    )
    return lines


def _conflict_line(c: dict, direction: str, would: bool) -> str:
    source = "local" if direction == "push" else "cloud"
    other = "cloud" if direction == "push" else "local"
    winner, loser = (source, other) if c["winner"] == "source" else (other, source)
    prefix = "would keep" if would else "conflict"
    where = "" if would else " on both sides"
    return (
        f"{prefix} {c['path']}: both changed; the {winner} version (newer) stays, "
        f"the {loser} one is kept as {c['kept_as']}{where}"
    )


def finish(report: dict) -> None:
    if report["failed"]:
        raise typer.Exit(exit_codes.ERROR)
    if report["clashes"]:
        raise typer.Exit(exit_codes.CONFLICT)
