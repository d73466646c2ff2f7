"""The tree side of `put -r`, `get -r` and `cp -r`, with the flags rclone and `aws s3` users reach
for: `--dry-run`, `--exclude/--include` (gitignore-style, as `sync` takes them) and `--transfers`.

A tree goes on past a file it cannot send: each one is named with its reason and the run ends
with a summary and the exit code of the worst outcome (`tree_report`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hycloud_core import paths
from hycloud_core.errors import HyCloudError, NotFoundError

from ..sdk import HyCloud, trees
from ..sync.diff import find
from ..sync.filters import PathFilter
from ..sync.scan import scan
from ..sync.state import SyncState
from . import tree_report
from .output import note
from .walk import walk


def keeper(keep: PathFilter | None) -> Callable[[str, bool], bool] | None:
    return None if keep is None else (lambda rel, is_dir: keep.keeps(rel, is_dir))


def upload(
    client: HyCloud,
    local: Path,
    remote: str,
    progress,
    follow: bool,
    on_skip: Callable[[Path], None],
    keep: PathFilter | None,
    dry_run: bool,
    transfers: int | None,
) -> None:
    """A tree into a folder; into one that exists, files the cloud already holds with the same
    content at the same path are not sent again (a rerun after an interruption sends the rest)."""
    same = already_there(client, local, remote, keep)
    if same:
        note(f"{len(same)} files already in {remote} with the same content: not sent again")
    kept = keeper(keep)

    def wanted(rel: str, is_dir: bool) -> bool:
        return (kept is None or kept(rel, is_dir)) and (is_dir or rel not in same)

    result = trees.upload_tree(
        client,
        local,
        remote,
        progress,
        follow,
        on_skip,
        keep=wanted,
        dry_run=dry_run,
        parallel=transfers,
        raise_errors=False,
    )
    tree_report.finish(result, "upload", str(local), remote, dry_run, unchanged=len(same))


def already_there(client: HyCloud, local: Path, remote: str, keep: PathFilter | None) -> set[str]:
    """Files (relative paths) the cloud folder holds with the same content, found by the Merkle
    exchange sync uses (one request when all are there); none when the folder does not exist.
    Local hashes come from sync's cache, so a rerun reads only files that changed."""
    try:
        if client.stat(remote)["type"] != "dir":
            return set()
    except NotFoundError:
        return set()
    keep = keep or PathFilter.of()
    state = SyncState("put")  # only its cache of local hashes is used
    try:
        tree = scan(local, state, keep)
    finally:
        state.close()
    diff = find(client.merkle_children, paths.normalize(remote), tree, keep)
    from ..encrypted.guard import refuse_tree

    refuse_tree(
        remote, diff.files, tree.files, "hycloud put -r"
    )  # the exchange met an encrypted folder's header
    return {rel for rel in tree.files if rel not in diff.files and rel not in diff.clashes}


def download(
    client: HyCloud,
    remote: str,
    local: str,
    progress,
    keep: PathFilter | None,
    dry_run: bool,
    transfers: int | None,
) -> None:
    result = trees.download_tree(
        client,
        remote,
        local,
        progress,
        keep=keeper(keep),
        dry_run=dry_run,
        parallel=transfers,
        raise_errors=False,
    )
    tree_report.finish(result, "download", remote, local, dry_run)


def copy(
    client: HyCloud, src: str, target: str, keep: PathFilter | None, dry_run: bool, transfers: int | None
) -> None:
    """A folder copied file by file (the cloud's whole-folder copy takes no filter): each kept
    file copied in the cloud (a large one shared, not copied), folders made first."""
    src = paths.normalize(src)
    result, folders, pairs = trees.TreeResult(), [target], []
    for folder in walk(client, src):
        rel_folder = folder.path[len(src) :].lstrip("/")
        for entry in folder.entries:
            rel = posixpath.join(rel_folder, entry["name"])
            if keep is not None and not _kept(keep, rel, entry["type"] == "dir"):
                continue
            dst = posixpath.join(target, rel)
            if entry["type"] == "dir":
                folders.append(dst)
            else:
                pairs.append((entry, dst))
    if dry_run:
        result.files = [{"src": e["path"], "path": d, "size": e["size"]} for e, d in pairs]
        return tree_report.finish(result, "copy", src, target, dry_run=True)
    with ThreadPoolExecutor(transfers or client.transfer.files) as pool:
        list(pool.map(lambda d: client.mkdir(d, parents=True), folders))
        for entry, dst, outcome in pool.map(lambda pair: (*pair, _copy_one(client, *pair)), pairs):
            if isinstance(outcome, HyCloudError):
                result.failed.append(
                    {
                        "path": dst,
                        "local": entry["path"],
                        "error": outcome.message,
                        "code": outcome.code,
                        "http_status": outcome.status,
                    }
                )
            else:
                result.files.append({"src": entry["path"], "path": dst, "size": entry["size"]})
    tree_report.finish(result, "copy", src, target)


def _kept(keep: PathFilter, rel: str, is_dir: bool) -> bool:
    return keep.keeps_dir(rel) if is_dir else keep.keeps_file(rel)


def _copy_one(client: HyCloud, entry: dict, dst: str) -> dict | HyCloudError:
    try:
        return client.cp(entry["path"], dst)
    except HyCloudError as err:
        return err
