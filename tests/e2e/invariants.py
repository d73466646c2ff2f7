"""Checks of what must hold in a deployment whatever operations ran: EFS, records and S3 agree."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from hycloud_core import content
from hycloud_core.fs.segments_format import stub_from_bytes
from hycloud_core.store.records import Records


def efs_files(ns_dir: Path) -> dict[str, dict]:
    """path -> {"kind", "size", hash} of every file in a namespace on EFS, link files read."""
    found = {}
    for top, _dirs, files in os.walk(ns_dir):
        for name in files:
            if name.startswith(".hc-tmp-"):
                continue  # a write in flight, or a crash's leftover (see temporary_files)
            host = Path(top) / name
            path = "/" + str(host.relative_to(ns_dir))
            mode = host.lstat().st_mode
            stub = stub_from_bytes(host.read_bytes()) if mode & stat.S_ISVTX else None
            if stub:  # a small file packed into a segment (fs/segments.py): still a small file
                found[path] = {"kind": "small", "size": stub.size, "sha256": stub.sha256}
            elif mode & stat.S_ISVTX:
                link = json.loads(host.read_bytes())
                found[path] = {"kind": "large", "size": link["size"], "content_hash": link["content_hash"]}
            else:
                data = host.read_bytes()
                found[path] = {"kind": "small", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return found


def temporary_files(ns_dir: Path) -> list[str]:
    return [name for _top, _dirs, files in os.walk(ns_dir) for name in files if name.startswith(".hc-tmp-")]


def records(deployment) -> Records:
    """The deployment's file records as the app reads them (keyed by folder id: store/dir_index.py)."""
    return Records.over(deployment.resource("dynamodb").Table(deployment.outputs["TableName"]))


def file_records(deployment, ns_key: str) -> dict[str, dict]:
    """path -> record of every file reachable from the namespace's root (not the trash's)."""
    return {r["path"]: r for r in records(deployment).files_under(ns_key, "/")}


def record_key(deployment, ns_key: str, path: str) -> dict[str, dict[str, str]]:
    """The low-level key of `path`'s file record (a key no record has when a folder above has none)."""
    key = records(deployment).file_key(ns_key, path) or {"pk": f"NS#{ns_key}", "sk": f"F#-/{path}"}
    return {k: {"S": v} for k, v in key.items()}


def records_disagreeing(deployment, ns_key: str, ns_dir: Path) -> list[str]:
    """Paths whose record is missing, extra, or says other than EFS."""
    on_efs, records = efs_files(ns_dir), file_records(deployment, ns_key)
    bad = sorted(set(on_efs) ^ set(records))
    for path in set(on_efs) & set(records):
        want, got = on_efs[path], records[path]
        if any(str(got.get(k)) != str(v) for k, v in want.items()):
            bad.append(path)
    return bad


def stored_objects(deployment) -> set[str]:
    s3 = deployment.client("s3")
    keys = set()
    for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=deployment.outputs["BucketName"], Prefix="objects/"
    ):
        keys |= {o["Key"].rsplit("/", 1)[-1] for o in page.get("Contents", [])}
    return keys


def unreadable_links(deployment, ns_dir: Path) -> list[str]:
    """Link files whose content is not in S3 (a lost file)."""
    stored = stored_objects(deployment)
    return sorted(
        p for p, f in efs_files(ns_dir).items() if f["kind"] == "large" and f["content_hash"] not in stored
    )


def object_key(content_hash: str) -> str:
    return content.object_key(content_hash)


def merkle_tree_on_efs(ns_dir: Path):
    """The namespace's Merkle tree recomputed from EFS (what the kept hashes must equal)."""
    from hycloud_core.fs.merkle_scan import namespace_tree
    from hycloud_core.fs.namespace import Namespace

    return namespace_tree(Namespace(str(ns_dir.parent), ns_dir.name))
