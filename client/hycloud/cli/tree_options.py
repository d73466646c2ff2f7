"""The tree flags of `put`, `get` and `cp` (`--dry-run`, `--exclude/--include`, `--transfers`) and
their checks, apart from `tree_commands` so that a single file's command and `--help` do not
import the sync machinery the tree side runs on."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from hycloud_core.errors import BadRequestError

from ..transfer.config import DEFAULT
from .output import note

if TYPE_CHECKING:
    from ..sync.filters import PathFilter

DryRun = Annotated[
    bool, typer.Option("-n", "--dry-run", help="List what would be done; do nothing.", metavar="")
]
Exclude = Annotated[
    list[str] | None,
    typer.Option("--exclude", metavar="GLOB", help="Leave out paths matching (gitignore-style; repeatable)."),
]
Include = Annotated[
    list[str] | None,
    typer.Option("--include", metavar="GLOB", help="Keep paths matching, though excluded (repeatable)."),
]
Transfers = Annotated[
    int | None,
    typer.Option("--transfers", metavar="N", help=f"Requests in flight at once (default {DEFAULT.files})."),
]


def path_filter(exclude: list[str] | None, include: list[str] | None) -> PathFilter | None:
    """The filter of --exclude/--include; None when no --exclude was given (all kept)."""
    if include and not exclude:
        note("--include only keeps what an --exclude leaves out; with no --exclude everything is kept")
    if not exclude:
        return None
    from ..sync.filters import PathFilter  # only with --exclude: pathspec and the sync package

    return PathFilter.of(tuple(exclude), tuple(include or ()))


def check_transfers(transfers: int | None) -> int | None:
    if transfers is not None and not 1 <= transfers <= 64:
        raise BadRequestError("--transfers takes 1 to 64", code="bad-usage")
    return transfers
