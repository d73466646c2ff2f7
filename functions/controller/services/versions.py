"""Version history of the caller's files (hycloud_core.fs.history): listing and restoring.

The route checks shapes; this turns the core's records into the API's answers. Kept versions are
those of overwrites and deletes within the deployment's retention (`HYCLOUD_VERSION_RETENTION_S`).
"""

from __future__ import annotations

from hycloud_core import paths
from hycloud_core.errors import NotFoundError
from hycloud_core.fs import FileSystem


def listing(fs: FileSystem, path: str) -> dict:
    """The path's kept versions, newest first, and what it holds now; 404 when it has neither."""
    path = paths.normalize(path)
    versions = fs.history.listing(path)
    return {"path": path, "current": _current(fs, path), "versions": [v.to_dict() for v in versions]}


def restore(fs: FileSystem, path: str, version: str | None, to: str | None) -> dict:
    """Write a kept version back (at `to` if given); what it replaces is kept in turn."""
    entry, record = fs.history.restore(path, version, to)
    return {"restored": record.to_dict(), "entry": _current(fs, entry.path) or entry.to_dict()}


def _current(fs: FileSystem, path: str) -> dict | None:
    try:
        return fs.ns.stat_hashed(path).to_dict()
    except NotFoundError:
        return None
