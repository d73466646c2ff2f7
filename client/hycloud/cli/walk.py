"""A remote tree listed folder by folder, several listings in flight: what `ls -R`, `du`, `tree`
and `find` read. The cloud has one listing route per folder (`GET /v1/dirs`), so a deep tree costs
one request per folder; they go LISTERS at a time, and the answers come back in name order.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hycloud_core.errors import ConflictError

if TYPE_CHECKING:
    from ..sdk.client import HyCloud

LISTERS = 8  # folder listings in flight at once


@dataclass
class Folder:
    """One listed folder: its path, depth below the walk's root (0 for the root) and entries."""

    path: str
    depth: int
    entries: list[dict] = field(default_factory=list)

    @property
    def subfolders(self) -> list[dict]:
        return [e for e in self.entries if e["type"] == "dir"]

    @property
    def files(self) -> list[dict]:
        return [e for e in self.entries if e["type"] != "dir"]


def list_or_stat(client: HyCloud, path: str) -> tuple[dict | None, list[dict]]:
    """(None, entries) for a folder, (its entry, [its entry]) for a file: one request for a
    folder, as `ls` is mostly asked about folders."""
    try:
        return None, client.ls(path)
    except ConflictError as err:
        if err.code != "not-a-directory":
            raise
    entry = client.stat(path)
    return entry, [entry]


def walk(client: HyCloud, root: str, max_depth: int | None = None) -> Iterator[Folder]:
    """Every folder below `root` (itself first), parents before children, siblings in name order;
    folders deeper than `max_depth` are not listed."""
    with ThreadPoolExecutor(LISTERS) as pool:

        def listing(path: str, depth: int) -> tuple[Folder, Future]:
            return Folder(path, depth), pool.submit(client.ls, path)

        stack = [listing(root, 0)]
        while stack:
            folder, pending = stack.pop(0)
            folder.entries = pending.result()
            deeper = max_depth is None or folder.depth < max_depth
            children = [listing(e["path"], folder.depth + 1) for e in folder.subfolders] if deeper else []
            stack[:0] = children  # depth first, so output reads as a tree; listings already in flight
            yield folder
