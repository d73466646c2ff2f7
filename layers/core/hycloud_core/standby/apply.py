"""What the standby does with the replication job's ops: the same filesystem operations a
controller does (namespace on EFS, file records, Merkle records), on the standby's own stores.

Ops (standby/namespace_copy.py): `dir`, `small` (bytes, sha256, mtime, mode), `link` (a large
file's link file as the primary holds it; its content is in the standby's bucket already,
records_copy.py), `remove` (a file or a whole folder). A failed op is reported, not raised, so
the rest of the batch still lands and the pass is recorded as not in step.
"""

from __future__ import annotations

import base64
from typing import Any

from .. import paths
from ..errors import HyCloudError, NotFoundError
from ..fs.operations import FileSystem
from ..linkfile import LinkFile


def _link(fs: FileSystem, op: dict[str, Any]) -> None:
    link = LinkFile.from_bytes(base64.b64decode(op["data"]))
    path = paths.normalize(op["path"])
    fs.ns.mkdir(paths.parent(path), parents=True)
    entry = fs.ns.write_link(path, link)
    fs.records.put_file(fs.user, path, kind="large", size=link.size, content_hash=link.content_hash)
    fs.merkle.file_written(path, link.content_hash, entry.mtime)


def _remove(fs: FileSystem, path: str) -> None:
    try:
        entry = fs.ns.stat(path)
    except NotFoundError:
        return
    if entry.type == "dir":
        fs.rmdir(path, recursive=True)
    else:
        fs.delete(path)


def apply_op(fs: FileSystem, op: dict[str, Any]) -> None:
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
    failed = []
    for op in ops:
        try:
            apply_op(fs, op)
        except (HyCloudError, OSError) as err:
            failed.append({"path": op.get("path"), "op": op.get("op"), "error": str(err)})
    return {"applied": len(ops) - len(failed), "failed": failed}
