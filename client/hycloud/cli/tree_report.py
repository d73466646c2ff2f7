"""What `put -r`, `get -r` and `cp -r` say when done: every file refused or failed named on stderr
with its reason, one summary line (sent, refused, skipped, failed), the exit code of the worst
outcome, and with --json one entry per file, each with its `status`."""

from __future__ import annotations

import sys

import typer

from ..sdk.trees import TreeResult, shown_name
from . import exit_codes
from .output import STATE, echo, emit

VERBS = {
    "upload": ("uploaded", "would upload"),
    "download": ("downloaded", "would download"),
    "copy": ("copied", "would copy"),
}


def entries(result: TreeResult) -> list[dict]:
    """One JSON entry per file: sent ("ok"), refused, failed, or a symlink skipped."""
    return (
        [{**f, "status": "ok"} for f in result.files]
        + [{**r, "status": "refused"} for r in result.refused]
        + [{**f, "status": "failed"} for f in result.failed]
        + [{"local": s, "status": "skipped", "error": "symlink (use -L to follow)"} for s in result.skipped]
    )


def summary(
    result: TreeResult, verb: str, src: str, dst: str, dry_run: bool = False, unchanged: int = 0
) -> str:
    done, would = VERBS[verb]
    count = len(result.files)
    sizes = [f.get("size") for f in result.files]
    known = [s for s in sizes if s is not None]
    size = f" ({sum(known):,} bytes)" if len(known) == len(sizes) else ""  # a dry download knows no sizes
    line = f"{would if dry_run else done} {count} file{'' if count == 1 else 's'}{size} from {src} to {dst}"
    extra = [
        f"{n} {what}"
        for n, what in (
            (len(result.refused), "refused (bad names)"),
            (len(result.skipped), "skipped (symlinks)"),
            (len(result.failed), "failed"),
            (unchanged, "already there (not sent again)"),
        )
        if n
    ]
    return line + ("; " + ", ".join(extra) if extra else "")


def exit_code(result: TreeResult, unchanged: int = 0) -> int:
    """0 when all went; PARTIAL when some went (or were there already) and others did not; else
    the first failure's own."""
    if result.complete:
        return exit_codes.SUCCESS
    if result.files or unchanged:
        return exit_codes.PARTIAL
    if result.refused:
        return exit_codes.USAGE
    first = result.failed[0]
    return exit_codes.for_error(first.get("code", "failed"), first.get("http_status", 500))


def warn(line: str) -> None:
    """An error about one file: on stderr even with --quiet."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def finish(
    result: TreeResult, verb: str, src: str, dst: str, dry_run: bool = False, unchanged: int = 0
) -> None:
    """Name every file not sent, print the summary (or JSON), exit by the worst outcome."""
    for r in result.refused:
        warn(f"refused {shown_name(r['local'])}: {r['error']}")
    for f in result.failed:
        warn(f"failed {shown_name(f.get('local', ''))} -> {f['path']}: {f['error']}")
    if dry_run and not STATE["json"]:
        for f in result.files:
            echo(f"{VERBS[verb][1]} {shown_name(f.get('local') or f.get('src', ''))} -> {f['path']}")
    emit(entries(result), summary(result, verb, src, dst, dry_run, unchanged))
    code = exit_code(result, unchanged)
    if code:
        raise typer.Exit(code)
