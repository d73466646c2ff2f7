"""Where a command's result lands, as `cp`, `mv` and `aws s3 cp` decide it: a destination that
ends in `/` or is an existing directory means "into it", under the source's name."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from hycloud_core import paths
from hycloud_core.errors import NotFoundError
from hycloud_core.store.tree_jobs import job_id

if TYPE_CHECKING:
    from ..sdk.client import HyCloud


def basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def join(folder: str, name: str) -> str:
    return f"{folder.rstrip('/')}/{name}"


def remote(client: HyCloud, name: str, dst: str) -> str:
    """The remote path `name` lands at when sent to `dst`."""
    if dst.endswith("/"):
        return join(dst, name)
    try:
        is_dir = client.stat(dst)["type"] == "dir"
    except NotFoundError:
        return dst
    return join(dst, name) if is_dir else dst


def remote_op(client: HyCloud, op: str, src: str, dst: str) -> str:
    """As `remote`, for a move or copy; rerunning one that stopped half way resumes it, so a
    destination the stopped job made is not taken for a directory to go into."""
    if not dst.endswith("/") and _resumable(client, op, src, dst):
        return dst
    return remote(client, basename(src), dst)


def local(src: str, dst: str) -> Path:
    """The local path a download of remote `src` lands at when sent to `dst`."""
    if dst.endswith(("/", os.sep)) or Path(dst).is_dir():
        return Path(dst) / basename(src)
    return Path(dst)


def _resumable(client: HyCloud, op: str, src: str, dst: str) -> bool:
    try:
        job = client.http.json(
            "GET", "/v1/tree-jobs", params={"id": job_id(op, paths.normalize(src), paths.normalize(dst))}
        )
    except NotFoundError:
        return False
    return job.get("state") != "succeeded"
