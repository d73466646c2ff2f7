"""Whole directory trees to and from the cloud, file by file over the SDK.

Symbolic links are not followed unless asked (`follow_symlinks`): each one left out is reported
through `on_skip`, so nothing is dropped without a word. A link that would loop back into the
tree is never followed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hycloud_core import paths

from .subscribers import ProgressLike, as_progress

if TYPE_CHECKING:
    from .client import HyCloud


@dataclass
class TreeResult:
    """What a tree transfer did: one entry per file, and the symlinks it left out."""

    files: list[dict] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def local_files(
    root: Path, follow_symlinks: bool = False, on_skip: Callable[[Path], None] | None = None
) -> Iterator[tuple[Path, str, bool]]:
    """(local path, path relative to root in POSIX form, is a directory), parents first."""
    seen = {root.resolve()}
    for folder, dirs, files in os.walk(root, followlinks=follow_symlinks):
        here = Path(folder)
        for name in sorted(dirs):
            item = here / name
            if item.is_symlink() and (not follow_symlinks or item.resolve() in seen):
                dirs.remove(name)
                (on_skip or _ignore)(item)
                continue
            seen.add(item.resolve())
            yield item, item.relative_to(root).as_posix(), True
        dirs.sort()
        for name in sorted(files):
            item = here / name
            if item.is_symlink() and (not follow_symlinks or not item.exists()):
                (on_skip or _ignore)(item)
                continue
            yield item, item.relative_to(root).as_posix(), False


def upload_tree(
    client: HyCloud,
    local_dir: str | Path,
    remote_dir: str,
    progress: ProgressLike = None,
    follow_symlinks: bool = False,
    on_skip: Callable[[Path], None] | None = None,
) -> TreeResult:
    """Upload the contents of `local_dir` into `remote_dir` (made if missing)."""
    local_dir, remote_dir, progress = Path(local_dir), paths.normalize(remote_dir), as_progress(progress)
    result = TreeResult()

    def skip(item: Path) -> None:
        result.skipped.append(str(item))
        (on_skip or _ignore)(item)

    client.mkdir(remote_dir, parents=True)
    for item, rel, is_dir in local_files(local_dir, follow_symlinks, skip):
        target = f"{remote_dir.rstrip('/')}/{rel}"
        if is_dir:
            client.mkdir(target, parents=True)
        else:
            st = item.stat()
            kept = {"mtime": st.st_mtime, "mode": stat.S_IMODE(st.st_mode) & 0o777}
            result.files.append(client.put(item, target, parents=True, progress=progress, **kept))
    return result


def download_tree(
    client: HyCloud, remote_dir: str, local_dir: str | Path, progress: ProgressLike = None
) -> TreeResult:
    """Download the contents of `remote_dir` into `local_dir` (made if missing)."""
    local_dir, progress = Path(local_dir), as_progress(progress)
    local_dir.mkdir(parents=True, exist_ok=True)
    result = TreeResult()
    for entry in client.iter_dir(paths.normalize(remote_dir)):
        target = local_dir / entry["name"]
        if entry["type"] == "dir":
            result.files += download_tree(client, entry["path"], target, progress).files
        else:
            client.get(entry["path"], target, progress=progress)
            restore_metadata(target, entry)
            result.files.append({"path": entry["path"], "local": str(target), "size": entry["size"]})
    return result


def restore_metadata(local: Path, entry: dict) -> None:
    """Give a downloaded file the mode bits and modification time the cloud keeps for it."""
    if entry.get("mode") is not None:
        local.chmod(entry["mode"] & 0o777)
    os.utime(local, (entry["mtime"], entry["mtime"]))


def _ignore(_item: Path) -> None:
    pass
