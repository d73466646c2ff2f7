"""What the standby does with the replication job's ops: the same filesystem operations a
controller does (namespace on EFS, file records, Merkle records), on the standby's own stores.

Ops (standby/namespace_copy.py): `dir`, `small` (bytes, sha256, mtime, mode), `link` (a large
file's link file as the primary holds it; its content is in the standby's bucket already,
records_copy.py), `remove` (a file or a whole folder). A failed op is reported, not raised, so
the rest of the batch still lands and the pass is recorded as not in step.

The primary's trash and history are copied as the primary holds them (standby/kept_copy.py), so
these ops keep none of their own: a replicated overwrite keeps no version and a replicated
removal is for good (the primary's item and version come by the kept ops). Kept ops: `dir`,
`small`, `link` with `trash` (an item id) write into that item's folder of the trash area, with
no records (a restore indexes what it puts back); `trash-item` starts an item's folder afresh,
`trash-purge` removes it; `version` keeps a small version's bytes by hash, `version-drop` removes
bytes no version names any more; `dir`, `small`, `link` with `snapshot` (an id) write into that
snapshot's folder of the snapshot area, `snapshot-item` starts it afresh, `snapshot-drop` removes it.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
from typing import Any

from .. import content, paths
from ..errors import BadRequestError, HyCloudError, NotFoundError
from ..fs.namespace import Namespace, file_mode
from ..fs.operations import FileSystem
from ..fs.snapshots import SnapshotArea
from ..fs.trash import TrashArea
from ..fs.version_copies import VersionCopies
from ..linkfile import LinkFile
from ..store.quotas import Quota


def _link(fs: FileSystem, op: dict[str, Any]) -> None:
    link = LinkFile.from_bytes(base64.b64decode(op["data"]))
    path = paths.normalize(op["path"])
    fs.ns.mkdir(paths.parent(path), parents=True)
    entry = fs.ns.write_link(path, link)
    fs.records.put_file(fs.user, path, kind="large", size=link.size, content_hash=link.content_hash)
    fs.merkle.file_written(path, link.content_hash, entry.mtime)


def _remove(fs: FileSystem, path: str) -> None:
    """For good: what the primary kept of it (trash item, version) comes by the kept ops."""
    try:
        entry = fs.ns.stat(path)
    except NotFoundError:
        return
    if entry.type == "dir":
        fs.rmdir(path, recursive=True)
    else:
        fs.remove_file(path)


def _namespaces_dir(fs: FileSystem) -> str:
    return os.path.dirname(fs.ns.root)


def apply_trash_op(fs: FileSystem, op: dict[str, Any]) -> None:
    """An op on one item of the standby's trash area (EFS only: its record is the job's to write)."""
    kind, area = op["op"], TrashArea(_namespaces_dir(fs), fs.user)
    folder = area.folder(op["trash"])
    if kind == "trash-purge":
        area.purge(op["trash"])
        fs.records.purge_trashed(fs.user, op["trash"])
        return
    if kind == "trash-item":  # an earlier copy cut short is started over
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        return
    _write_kept(Namespace(area.root, op["trash"]), op)


def apply_snapshot_op(fs: FileSystem, op: dict[str, Any]) -> None:
    """An op on one snapshot of the standby's snapshot area (its record is the job's to write)."""
    kind, area = op["op"], SnapshotArea(_namespaces_dir(fs), fs.user)
    if kind == "snapshot-drop":
        area.remove(op["snapshot"])
    elif kind == "snapshot-item":  # an earlier copy cut short is started over
        area.start(op["snapshot"])
    else:
        _write_kept(area.namespace(op["snapshot"]), op)


def _write_kept(ns: Namespace, op: dict[str, Any]) -> None:
    """A folder or file of a kept tree (a trash item's, a snapshot's): EFS only, no records."""
    kind, path = op["op"], op["path"]
    if kind == "dir":
        ns.mkdir(path, parents=True)
    elif kind == "small":
        data = base64.b64decode(op["data"])
        ns.write(path, data, parents=True, mode=file_mode(op.get("mode") or 0o640), mtime=op.get("mtime"))
    elif kind == "link":
        ns.write_link(path, LinkFile.from_bytes(base64.b64decode(op["data"])), parents=True)
    else:
        raise HyCloudError(f"unknown kept op {kind!r}", code="bad-op", status=400)


def apply_version_op(fs: FileSystem, op: dict[str, Any]) -> None:
    """A small version's bytes kept (checked against their hash) or dropped, by content hash."""
    copies = VersionCopies(_namespaces_dir(fs), fs.user)
    if op["op"] == "version-drop":
        with contextlib.suppress(FileNotFoundError):
            os.unlink(copies.path(op["hash"]))
        return
    data = base64.b64decode(op["data"])
    if content.hash_bytes(data) != op["hash"]:
        raise BadRequestError("a version's bytes do not match its hash", code="bad-op")
    copies.keep_bytes(data, op["hash"])


def apply_op(fs: FileSystem, op: dict[str, Any]) -> None:
    if "trash" in op:
        return apply_trash_op(fs, op)
    if "snapshot" in op:
        return apply_snapshot_op(fs, op)
    if op["op"] in ("version", "version-drop"):
        return apply_version_op(fs, op)
    kind, path = op["op"], op["path"]
    if kind == "dir":
        fs.mkdir(path, parents=True)
    elif kind == "small":
        data = base64.b64decode(op["data"])
        fs.put_small(path, data, op["sha256"], parents=True, mtime=op.get("mtime"), mode=op.get("mode"))
    elif kind == "link":
        _link(fs, op)
    elif kind == "remove":
        _remove(fs, path)
    else:
        raise HyCloudError(f"unknown op {kind!r}", code="bad-op", status=400)


def apply_ops(fs: FileSystem, ops: list[dict[str, Any]]) -> dict[str, Any]:
    fs.retain_s = 0  # the primary's versions are copied as they are, none made here
    fs.quota = Quota(None, fs.user)  # the primary's usage is copied as a record: none counted here
    failed: list[dict[str, Any]] = []
    for op in ops:
        try:
            apply_op(fs, op)
        except (HyCloudError, OSError) as err:
            which: dict[str, Any] = {
                k: op[k] for k in ("trash", "snapshot", "hash") if k in op
            }  # a kept op's
            failed.append({"path": op.get("path"), "op": op.get("op"), **which, "error": str(err)})
    return {"applied": len(ops) - len(failed), "failed": failed}
