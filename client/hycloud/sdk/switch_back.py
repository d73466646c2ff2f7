"""Switch-back's reconciliation: the primary is given what was written on the standby while it was
unreachable, found by comparing the two controllers' Merkle trees level by level
(hycloud_core/merkle/remote_diff.py), so an unchanged namespace costs one round per controller.

For each topmost difference: the standby's file or folder is copied to the primary unless the
primary's is newer (or the primary deleted it later: its tombstone is newer); a deletion on the standby (a tombstone) removes the primary's copy unless
that copy is newer; what only the primary has (written there after the standby was last in
step, and never seen by the standby) stays.
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hycloud_core.errors import NotFoundError
from hycloud_core.merkle.remote_diff import Difference, differences

if TYPE_CHECKING:
    from .client import HyCloud


def reconcile_primary(src: HyCloud, dst: HyCloud) -> int:
    """Copy the standby's (`src`) newer state to the primary (`dst`); how many files or folders
    changed there. The failover transport calls it through the callable HyCloud hands it, so the
    transport never imports the SDK."""
    found = differences(src.merkle_children, dst.merkle_children)
    with tempfile.TemporaryDirectory(prefix="hycloud-switch-back-") as tmp:
        return sum(_settle(diff, src, dst, Path(tmp)) for diff in found)


def _newer(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return float(a["mtime"]) >= float(b["mtime"])


def _settle(diff: Difference, src: HyCloud, dst: HyCloud, tmp: Path) -> int:
    s, t = diff.source, diff.target
    if not diff.source_live:
        if (
            s is not None and t is not None and diff.target_live and _newer(s, t)
        ):  # deleted on the standby, later
            _remove(dst, diff.path, t["kind"])
            return 1
        return 0
    assert s is not None  # live
    if t is not None and not _newer(s, t):
        return 0  # the primary's is newer, or the primary deleted it after the standby's copy was made
    if t is not None and diff.target_live and t["kind"] != s["kind"]:
        _remove(dst, diff.path, t["kind"])
    local = tmp / uuid.uuid4().hex
    if s["kind"] == "dir":
        src.download_tree(diff.path, local)
        dst.mkdir(diff.path, parents=True)
        dst.upload_tree(local, diff.path)
        return 1
    src.get(diff.path, local)
    dst.put(local, diff.path, parents=True)
    return 1


def _remove(dst: HyCloud, path: str, kind: str) -> None:
    try:
        dst.rmdir(path, recursive=True) if kind == "dir" else dst.rm(path)
    except NotFoundError:
        pass
