"""One user's namespace brought in step on the standby, driven by the Merkle exchange.

The primary's tree (its Merkle records) is compared with the standby's level by level
(merkle/remote_diff.py); only the topmost differing nodes are read from the primary's EFS and sent
to the standby's apply function (standby/apply.py), in batches that fit one invocation.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ..fs.namespace import TMP_PREFIX, Namespace
from ..linkfile import LinkFile
from ..merkle.remote_diff import Difference, differences, live
from ..store.merkle_records import MerkleRecords

BATCH_BYTES = 2 * 1024 * 1024  # base64 grows it by a third, twice: the apply call crosses to the
# standby's region as the body of a reach call (reach.MAX_BODY), itself base64 in a Lambda payload
Op = dict[str, Any]


def file_op(ns: Namespace, path: str) -> Op | None:
    """The op that recreates the file at `path` as EFS holds it now (None: it is gone)."""
    entry = ns.file_entry(path)
    if entry is None:
        return None
    if entry.storage == "small":
        data = ns.read(path)  # a packed file's bytes, not its stub: the standby has no segments
    else:
        with open(ns.host(path), "rb") as f:
            data = f.read()
    op: Op = {"op": "link" if entry.storage == "large" else "small", "path": path, "mtime": entry.mtime}
    op["data"] = base64.b64encode(data).decode()
    if op["op"] == "small":
        op.update(sha256=hashlib.sha256(data).hexdigest(), mode=entry.mode)
    return op


def tree_ops(ns: Namespace, top: str) -> Iterator[Op]:
    """A folder and everything below it, parents before children."""
    yield {"op": "dir", "path": top}
    root = Path(ns.root)
    for folder, dirs, files in os.walk(ns.host(top)):
        base = "/" + Path(folder).relative_to(root).as_posix()
        base = "" if base == "/." else base
        yield from ({"op": "dir", "path": f"{base}/{name}"} for name in sorted(dirs))
        for name in sorted(files):
            if not name.startswith(TMP_PREFIX) and (op := file_op(ns, f"{base}/{name}")):
                yield op


def ops_for(ns: Namespace, diff: Difference) -> Iterator[Op]:
    source, target = diff.source, diff.target
    if live(target) and (not live(source) or source["kind"] != target["kind"]):
        yield {"op": "remove", "path": diff.path}
    if not live(source):
        return
    if source["kind"] == "dir":
        yield from tree_ops(ns, diff.path)
    elif op := file_op(ns, diff.path):
        yield op


def batches(ops: Iterator[Op]) -> Iterator[list[Op]]:
    batch: list[Op] = []
    size = 0
    for op in ops:
        weight = len(op.get("data", "")) * 3 // 4 + 200
        if batch and size + weight > BATCH_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(op)
        size += weight
    if batch:
        yield batch


def copy_namespace(
    user: str,
    namespaces_dir: str,
    source_table: Any,
    target_table: Any,
    apply: Callable[[str, list[Op]], dict[str, Any]],
    before_link: Callable[[str], Any] = lambda content_hash: None,
) -> dict[str, int]:
    """Send the standby what differs for `user`; counts of ops sent and failed. `before_link`
    (content hash) runs before a link file is sent: its object must be on the standby first."""
    found = differences(MerkleRecords(source_table, user).answer, MerkleRecords(target_table, user).answer)
    if not found:
        return {"ops": 0, "failed": 0}
    ns = Namespace(namespaces_dir, user)
    sent, failed = send(user, (op for diff in found for op in ops_for(ns, diff)), apply, before_link)
    return {"ops": sent, "failed": len(failed)}


def send(
    user: str,
    ops: Iterable[Op],
    apply: Callable[[str, list[Op]], dict[str, Any]],
    before_link: Callable[[str], Any],
) -> tuple[int, list[dict[str, Any]]]:
    """Ops to the apply function in batches that fit one invocation, each link file's object
    put on the standby first (`before_link`); how many were sent, and the failures reported."""
    sent, failed = 0, list[dict[str, Any]]()
    for batch in batches(iter(ops)):
        for op in batch:
            if op["op"] == "link":
                before_link(LinkFile.from_bytes(base64.b64decode(op["data"])).content_hash)
        sent += len(batch)
        failed += apply(user, batch).get("failed", [])
    return sent, failed
