"""Recursive transfers of directory trees, file by file over the SDK."""

from __future__ import annotations

from pathlib import Path

from hycloud_core import paths

from ..sdk import HyCloud
from ..transfer import Progress


def put_tree(client: HyCloud, local: Path, remote: str, progress: Progress | None = None) -> list[dict]:
    remote = paths.normalize(remote)
    client.mkdir(remote, parents=True)
    results = []
    for item in sorted(local.rglob("*")):
        target = f"{remote.rstrip('/')}/{item.relative_to(local).as_posix()}"
        if item.is_dir() and not item.is_symlink():
            client.mkdir(target, parents=True)
        elif item.is_file() and not item.is_symlink():
            results.append(client.put(item, target, parents=True, progress=progress))
    return results


def get_tree(client: HyCloud, remote: str, local: Path, progress: Progress | None = None) -> list[dict]:
    remote = paths.normalize(remote)
    local.mkdir(parents=True, exist_ok=True)
    results = []
    for entry in client.iter_dir(remote):
        target = local / entry["name"]
        if entry["type"] == "dir":
            results += get_tree(client, entry["path"], target, progress)
        else:
            client.get(entry["path"], target, progress=progress)
            results.append({"path": entry["path"], "local": str(target), "size": entry["size"]})
    return results
