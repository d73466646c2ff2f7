"""Many small files at once: `put_files` / `get_files`, one result per file.

This version sends them file by file in a thread pool; bundling many files into one request
replaces it without changing the interface.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from hycloud_core.errors import HyCloudError

from .subscribers import ProgressLike

if TYPE_CHECKING:
    from .client import HyCloud

WORKERS = 8


def put_files(
    client: HyCloud, pairs: Sequence[tuple[Path, str]], progress: ProgressLike = None
) -> list[dict]:
    """Upload (local Path, remote path) pairs; each result has "path" and "status" or "error"."""

    def one(pair: tuple[Path, str]) -> dict:
        local, remote = pair
        st = local.stat()
        kept = {"mtime": st.st_mtime, "mode": stat.S_IMODE(st.st_mode) & 0o777}
        return client.put(local, remote, parents=True, progress=progress, **kept)

    return _each(pairs, one, lambda pair: pair[1])


def get_files(
    client: HyCloud, pairs: Sequence[tuple[str, Path]], progress: ProgressLike = None
) -> list[dict]:
    """Download (remote path, local Path) pairs; each result has "path" and "status" or "error"."""

    def one(pair: tuple[str, Path]) -> dict:
        remote, local = pair
        local.parent.mkdir(parents=True, exist_ok=True)
        client.get(remote, local, progress=progress)
        return {"local": str(local), "size": os.path.getsize(local)}

    return _each(pairs, one, lambda pair: pair[0])


def _each(pairs: Sequence, one: Callable[..., dict], remote_of: Callable[..., str]) -> list[dict]:
    def run(pair) -> dict:
        try:
            return {**one(pair), "path": remote_of(pair), "status": "ok"}
        except (HyCloudError, OSError) as e:
            return {"path": remote_of(pair), "status": "failed", "error": str(e)}

    if not pairs:
        return []
    with ThreadPoolExecutor(min(WORKERS, len(pairs))) as pool:
        return list(pool.map(run, pairs))
