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
from hycloud_core.errors import HyCloudError, InvalidPathError

from . import bundles
from .subscribers import ProgressLike, as_progress

if TYPE_CHECKING:
    from .client import HyCloud


@dataclass
class TreeResult:
    """What a tree transfer did: one entry per file sent, the symlinks it left out, the files it
    refused to send (a name the cloud cannot hold: `{"local", "type", "error", "code"}`) and those that
    failed (`{"path", "local", "error", "code"}`). A dry run fills `files` with what it would send."""

    files: list[dict] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    refused: list[dict] = field(default_factory=list)
    failed: list[dict] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not (self.refused or self.failed)


def shown_name(name: str) -> str:
    """A local name as one readable line: control characters and undecodable bytes escaped
    (`a\\nb`), so a refusal never hides in a line break."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def kept_metadata(local: str | Path) -> dict:
    """What an upload keeps of a local file besides its bytes: modification time and mode bits."""
    st = os.stat(local)
    return {"mtime": st.st_mtime, "mode": stat.S_IMODE(st.st_mode) & 0o777}


def local_files(
    root: Path,
    follow_symlinks: bool = False,
    on_skip: Callable[[Path], None] | None = None,
    keep: Callable[[str, bool], bool] | None = None,
) -> Iterator[tuple[Path, str, bool]]:
    """(local path, path relative to root in POSIX form, is a directory), parents first; what
    `keep(rel, is_dir)` says no to is left out (a folder with all below it)."""
    seen = {root.resolve()}
    keep = keep or _everything
    for folder, dirs, files in os.walk(root, followlinks=follow_symlinks):
        here = Path(folder)
        for name in sorted(dirs):
            item = here / name
            if not keep(item.relative_to(root).as_posix(), True):
                dirs.remove(name)
                continue
            if item.is_symlink() and (not follow_symlinks or item.resolve() in seen):
                dirs.remove(name)
                (on_skip or _ignore)(item)
                continue
            seen.add(item.resolve())
            yield item, item.relative_to(root).as_posix(), True
        dirs.sort()
        for name in sorted(files):
            item = here / name
            if not keep(item.relative_to(root).as_posix(), False):
                continue
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
    keep: Callable[[str, bool], bool] | None = None,
    dry_run: bool = False,
    parallel: int | None = None,
    raise_errors: bool = True,
) -> TreeResult:
    """Upload the contents of `local_dir` into `remote_dir` (made if missing). A file whose name
    the cloud cannot hold (a backslash, a control character: `paths.normalize`) is refused and
    the others still go; with `raise_errors` the first refusal or failure (after one retry) is
    raised once the others are stored, else every one is in the result. `keep(rel, is_dir)`
    leaves out what it says no to (--exclude/--include); `dry_run` sends nothing and lists what
    would be sent; `parallel` is the number of requests in flight (default: TransferConfig.files)."""
    local_dir, remote_dir, progress = Path(local_dir), paths.normalize(remote_dir), as_progress(progress)
    result = TreeResult()

    def skip(item: Path) -> None:
        result.skipped.append(str(item))
        (on_skip or _ignore)(item)

    if not bundled:
        client.mkdir(remote_dir, parents=True)
        return _upload_one_by_one(client, local_dir, remote_dir, progress, follow_symlinks, skip, result)
    found = _named(local_files(local_dir, follow_symlinks, skip, keep), remote_dir, result)
    pairs = [(item, remote) for item, remote, is_dir in found if not is_dir]
    if dry_run:
        result.files = [{"path": r, "local": str(item), "size": item.stat().st_size} for item, r in pairs]
        return result
    if not pairs:  # else every file's request makes its folders (one round trip less)
        client.mkdir(remote_dir, parents=True)
    stored = bundles.put_files(client, pairs, progress, parallel=parallel)
    made = _ancestors(remote for _, remote in pairs)
    empty = [d for _, d, is_dir in found if is_dir and d not in made]
    with ThreadPoolExecutor(parallel or client.transfer.files) as pool:  # folders that no file made
        list(pool.map(lambda d: client.mkdir(d, parents=True), _leaves(empty)))
    result.files = [{k: v for k, v in r.items() if k != "status"} for r in stored if r["status"] == "ok"]
    result.failed = [
        {**r, "local": str(item)} for r, (item, _) in zip(stored, pairs, strict=True) if r["status"] != "ok"
    ]
    if raise_errors:
        _raise_first(result)
    return result


def _named(
    found: Iterable[tuple[Path, str, bool]], remote_dir: str, result: TreeResult
) -> list[tuple[Path, str, bool]]:
    """(local path, remote path, is a directory) of what can be sent; a name the cloud cannot
    hold goes to `result.refused` with the reason."""
    named = []
    for item, rel, is_dir in found:
        try:
            named.append((item, paths.normalize(_under(remote_dir, rel)), is_dir))
        except HyCloudError as err:
            kind = "dir" if is_dir else "file"
            result.refused.append({"local": str(item), "type": kind, "error": err.message, "code": err.code})
    return named


def _raise_first(result: TreeResult) -> None:
    """The first refusal or failure, raised as the error it was (for callers that stop on one)."""
    if result.refused:
        first = result.refused[0]
        raise InvalidPathError(f"{shown_name(first['local'])}: {first['error']}", code=first["code"])
    bundles.raise_first_error(result.failed)


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
    keep: Callable[[str, bool], bool] | None = None,
    dry_run: bool = False,
    parallel: int | None = None,
    raise_errors: bool = True,
) -> TreeResult:
    """Download the contents of `remote_dir` into `local_dir` (made if missing); with
    `raise_errors` the first file that failed (after one retry) is raised once the others are
    written, else every failure is in the result. `keep`, `dry_run` and `parallel` as for
    `upload_tree`."""
    local_dir, progress = Path(local_dir), as_progress(progress)
    if not bundled:
        local_dir.mkdir(parents=True, exist_ok=True)
        return _download_one_by_one(client, remote_dir, local_dir, progress)
    keep, files, folders = keep or _everything, [], []
    for entry, target in remote_files(client, paths.normalize(remote_dir), local_dir):
        rel = target.relative_to(local_dir).as_posix()
        if rel != "." and not _kept_below(keep, rel, entry is None):
            continue
        (folders.append(target) if entry is None else files.append((entry["path"], target)))
    if dry_run:
        return TreeResult(files=[{"path": p, "local": str(t)} for p, t in files])
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    got = bundles.get_files(client, files, progress, parallel=parallel)
    result = TreeResult(
        files=[{k: r[k] for k in ("path", "local", "size")} for r in got if r["status"] == "ok"]
    )
    result.failed = [
        {**r, "local": str(t)} for r, (_, t) in zip(got, files, strict=True) if r["status"] != "ok"
    ]
    if raise_errors:
        bundles.raise_first_error(result.failed)
    return result


def _kept_below(keep: Callable[[str, bool], bool], rel: str, is_dir: bool) -> bool:
    """A path is kept when it and every folder above it are (a listing does not prune)."""
    parts = rel.split("/")
    folders_kept = all(keep("/".join(parts[:i]), True) for i in range(1, len(parts)))
    return folders_kept and keep(rel, is_dir)


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


def _everything(_rel: str, _is_dir: bool) -> bool:
    return True
