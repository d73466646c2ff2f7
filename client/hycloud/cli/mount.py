"""`hycloud mount DIR`: your files as a local folder (FUSE), until unmounted or Ctrl-C."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def mount_command(
    directory: Annotated[Path, typer.Argument(help="Empty local folder to mount on.")],
    read_ahead_mib: Annotated[int, typer.Option("--read-ahead", help="Read-ahead window in MiB.")] = 8,
) -> None:
    """Mount your HyCloud files on DIR. Reads fetch ranges ahead; writes upload when a file is closed.

    Example: `hycloud mount ~/hycloud &`, then `fusermount3 -u ~/hycloud` to unmount.
    """
    from ..mount import mount
    from ..sdk.client import HyCloud

    if not directory.is_dir():
        raise typer.BadParameter(f"{directory} is not a folder", param_hint="DIR")
    mount(HyCloud.from_config(), str(directory), read_ahead=read_ahead_mib * 1024 * 1024)
