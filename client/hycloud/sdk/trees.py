"""Whole directory trees to and from the cloud: small files in bundles (sdk/bundles.py), large
ones alone, several requests at a time; `bundles=False` sends one request per file, as before.

Symbolic links are not followed unless asked (`follow_symlinks`): each one left out is reported
through `on_skip`, so nothing is dropped without a word. A link that would loop back into the
tree is never followed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hycloud_core import paths

from . import bundles
from .subscribers import ProgressLike, as_progress

if TYPE_CHECKING:
    from .client import HyCloud


@dataclass
class TreeResult:
    """What a tree transfer did: one entry per file, and the symlinks it left out."""

    files: list[dict] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def kept_metadata(local: str | Path) -> dict:
    """What an upload keeps of a local file besides its bytes: modification time and mode bits."""
    st = os.stat(local)
    return {"mtime": st.st_mtime, "mode": stat.S_IMODE(st.st_mode) & 0o777}


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
    bundled: bool = True,
) -> TreeResult:
    """Upload the contents of `local_dir` into `remote_dir` (made if missing); the first file
    that failed (after one retry) is raised once the others are stored."""
    local_dir, remote_dir, progress = Path(local_dir), paths.normalize(remote_dir), as_progress(progress)
    result = TreeResult()

    def skip(item: Path) -> None:
        result.skipped.append(str(item))
        (on_skip or _ignore)(item)

    if not bundled:
        client.mkdir(remote_dir, parents=True)
        return _upload_one_by_one(client, local_dir, remote_dir, progress, follow_symlinks, skip, result)
    found = list(local_files(local_dir, follow_symlinks, skip))
    pairs = [(item, _under(remote_dir, rel)) for item, rel, is_dir in found if not is_dir]
    if not pairs:  # else every file's request makes its folders (one round trip less)
        client.mkdir(remote_dir, parents=True)
    stored = bundles.put_files(client, pairs, progress)
    made = _ancestors(remote for _, remote in pairs)
    empty = [d for _, rel, is_dir in found if is_dir and (d := _under(remote_dir, rel)) not in made]
    with ThreadPoolExecutor(bundles.PARALLEL) as pool:  # folders that no file made
        list(pool.map(lambda d: client.mkdir(d, parents=True), _leaves(empty)))
    bundles.raise_first_error(stored)
    result.files = [{k: v for k, v in r.items() if k != "status"} for r in stored]
    return result


def _upload_one_by_one(
    client: HyCloud,
    local_dir: Path,
    remote_dir: str,
    progress: ProgressLike,
    follow_symlinks: bool,
    skip: Callable[[Path], None],
    result: TreeResult,
) -> TreeResult:
    for item, rel, is_dir in local_files(local_dir, follow_symlinks, skip):
        target = f"{remote_dir.rstrip('/')}/{rel}"
        if is_dir:
            client.mkdir(target, parents=True)
        else:
            kept = kept_metadata(item)
            result.files.append(client.put(item, target, parents=True, progress=progress, **kept))
    return result


def download_tree(
    client: HyCloud,
    remote_dir: str,
    local_dir: str | Path,
    progress: ProgressLike = None,
    bundled: bool = True,
) -> TreeResult:
    """Download the contents of `remote_dir` into `local_dir` (made if missing); the first file
    that failed (after one retry) is raised once the others are written."""
    local_dir, progress = Path(local_dir), as_progress(progress)
    local_dir.mkdir(parents=True, exist_ok=True)
    if not bundled:
        return _download_one_by_one(client, remote_dir, local_dir, progress)
    files = []
    for entry, target in remote_files(client, paths.normalize(remote_dir), local_dir):
        if entry is None:
            target.mkdir(parents=True, exist_ok=True)
        else:
            files.append((entry["path"], target))
    got = bundles.get_files(client, files, progress)
    bundles.raise_first_error(got)
    return TreeResult(files=[{k: r[k] for k in ("path", "local", "size")} for r in got])


def remote_files(client: HyCloud, remote_dir: str, local_dir: Path) -> Iterator[tuple[dict | None, Path]]:
    """({"path"}, local path) of every file below `remote_dir`, and (None, local path) of every
    folder, folders first; listed a page of thousands of entries per request."""
    yield None, local_dir
    cursor = ""
    while True:
        params = {"path": remote_dir, **({"cursor": cursor} if cursor else {})}
        page = client.http.json("GET", "/v1/bundles/tree", params=params)
        for entry in page["entries"]:
            rel = paths.normalize(entry["rel"]).lstrip("/")  # never "..": stays inside local_dir
            target = local_dir.joinpath(*rel.split("/"))
            yield (None if entry["type"] == "dir" else {"path": _under(remote_dir, entry["rel"])}), target
        cursor = page.get("cursor")
        if not cursor:
            return


def _download_one_by_one(client: HyCloud, remote_dir: str, local_dir: Path, progress) -> TreeResult:
    local_dir.mkdir(parents=True, exist_ok=True)
    result = TreeResult()
    for entry in client.iter_dir(paths.normalize(remote_dir)):
        target = local_dir / entry["name"]
        if entry["type"] == "dir":
            result.files += _download_one_by_one(client, entry["path"], target, progress).files
        else:
            client.get(entry["path"], target, progress=progress)
            restore_metadata(target, entry)
            result.files.append({"path": entry["path"], "local": str(target), "size": entry["size"]})
    return result


def _under(remote_dir: str, rel: str) -> str:
    return f"{remote_dir.rstrip('/')}/{rel}"


def _ancestors(files: Iterable[str]) -> set[str]:
    """Every folder above the given paths (made by the uploads of those files)."""
    out: set[str] = set()
    for path in files:
        while (path := paths.parent(path)) not in out and path != "/":
            out.add(path)
    return out


def _leaves(folders: list[str]) -> list[str]:
    """The folders no other one is inside: making them with parents makes all."""
    inner = _ancestors(folders)
    return [d for d in folders if d not in inner]


def restore_metadata(local: Path, entry: dict) -> None:
    """Give a downloaded file the mode bits and modification time the cloud keeps for it."""
    if entry.get("mode") is not None:
        local.chmod(entry["mode"] & 0o777)
    os.utime(local, (entry["mtime"], entry["mtime"]))


def _ignore(_item: Path) -> None:
    pass
