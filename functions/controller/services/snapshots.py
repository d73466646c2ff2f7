"""The caller's snapshots (hycloud_core.fs.snapshots): made, listed, browsed, read, restored, removed.

The route checks shapes; this turns the core's records and entries into the API's answers.
"""

from __future__ import annotations

import hashlib
import json

from aws_lambda_powertools.event_handler import Response
from context import CONFIG

from hycloud_core.fs import FileSystem, Namespace
from hycloud_core.fs.snapshots import Snapshots
from hycloud_core.store.snapshot_records import READY
from services import tree_ops

LINK_TYPE = "application/vnd.hycloud.link+json"


def listing(fs: FileSystem) -> dict:
    """Every snapshot, newest first, and what they hold together."""
    snaps = Snapshots(fs)
    return {"snapshots": [s.to_dict() for s in snaps.listing()], "totals": snaps.records.totals()}


def create(fs: FileSystem, path: str, name: str | None) -> dict:
    """Made at once; a tree not copied within the request is copied by a job, answered with it."""
    snaps = Snapshots(fs)
    snap = snaps.create(path, name, inline=CONFIG.tree_inline_limit)
    if snap.state == READY:
        return {"snapshot": snap.to_dict()}
    try:
        job = tree_ops.make_snapshot(fs, snap)
    except BaseException:
        snaps.abandon(snap)
        raise
    return {"snapshot": snap.to_dict(), "job": tree_ops.answer(job)}


def browse(fs: FileSystem, name: str, path: str, after: str | None, limit: int) -> dict:
    entries, cursor = Snapshots(fs).browse(name, path, after, limit)
    return {"entries": [e.to_dict() for e in entries], "cursor": cursor}


def stat(fs: FileSystem, name: str, path: str) -> dict:
    return Snapshots(fs).stat(name, path).to_dict()


def read(fs: FileSystem, name: str, path: str) -> Response:
    """A small file's bytes (with their sha256), or where to fetch a large file's content; from a
    snapshot being made too (its folders not yet copied are read live: fs/snapshots.py `read`)."""

    def fetch(ns: Namespace, at: str) -> tuple[dict | None, bytes]:
        if ns.stat(at).storage == "large":
            reader = type(fs)(fs.user, ns, fs.records, fs.objects, fs.s3, fs.bucket)
            return reader.download_link(at), b""
        return None, ns.read(at)

    snap, (link, data) = Snapshots(fs).read(name, path, fetch)
    if link is not None:
        return Response(status_code=200, content_type=LINK_TYPE, body=json.dumps(link))
    return Response(
        status_code=200,
        content_type="application/octet-stream",
        body=data,
        headers={"x-hycloud-sha256": hashlib.sha256(data).hexdigest(), "x-hycloud-snapshot": snap.name},
    )


def restore(fs: FileSystem, name: str, path: str, to: str | None, replace: bool) -> dict:
    """Within the request up to the tree job's inline limit; a larger tree by a job (its answer)."""
    snaps = Snapshots(fs)
    plan = snaps.plan_restore(name, path, to, replace, CONFIG.tree_inline_limit)
    if plan.large:
        return tree_ops.answer(tree_ops.restore_snapshot(fs, plan, to))
    entry, snap = snaps.restore_planned(plan, to)
    return {"restored": snap.to_dict(), "entry": entry.to_dict()}


def remove(fs: FileSystem, name: str) -> dict:
    return {"removed": Snapshots(fs).remove(name).to_dict()}
