"""The caller's snapshots (hycloud_core.fs.snapshots): made, listed, browsed, read, restored, removed.

The route checks shapes; this turns the core's records and entries into the API's answers.
"""

from __future__ import annotations

import hashlib
import json

from aws_lambda_powertools.event_handler import Response

from hycloud_core.fs import FileSystem
from hycloud_core.fs.snapshots import Snapshots

LINK_TYPE = "application/vnd.hycloud.link+json"


def listing(fs: FileSystem) -> dict:
    """Every snapshot, newest first, and what they hold together."""
    snaps = Snapshots(fs)
    return {"snapshots": [s.to_dict() for s in snaps.listing()], "totals": snaps.records.totals()}


def create(fs: FileSystem, path: str, name: str | None) -> dict:
    return {"snapshot": Snapshots(fs).create(path, name).to_dict()}


def browse(fs: FileSystem, name: str, path: str, after: str | None, limit: int) -> dict:
    entries, cursor = Snapshots(fs).browse(name, path, after, limit)
    return {"entries": [e.to_dict() for e in entries], "cursor": cursor}


def stat(fs: FileSystem, name: str, path: str) -> dict:
    return Snapshots(fs).stat(name, path).to_dict()


def read(fs: FileSystem, name: str, path: str) -> Response:
    """A small file's bytes (with their sha256), or where to fetch a large file's content."""
    snap, tree = Snapshots(fs).tree(name)
    entry = tree.stat(path)
    if entry.storage == "large":
        reader = type(fs)(fs.user, tree, fs.records, fs.objects, fs.s3, fs.bucket)
        return Response(status_code=200, content_type=LINK_TYPE, body=json.dumps(reader.download_link(path)))
    data = tree.read(path)
    return Response(
        status_code=200,
        content_type="application/octet-stream",
        body=data,
        headers={"x-hycloud-sha256": hashlib.sha256(data).hexdigest(), "x-hycloud-snapshot": snap.name},
    )


def restore(fs: FileSystem, name: str, path: str, to: str | None, replace: bool) -> dict:
    entry, snap = Snapshots(fs).restore(name, path, to, replace)
    return {"restored": snap.to_dict(), "entry": entry.to_dict()}


def remove(fs: FileSystem, name: str) -> dict:
    return {"removed": Snapshots(fs).remove(name).to_dict()}
