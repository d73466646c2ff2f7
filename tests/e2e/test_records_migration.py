"""Records written by the layout keyed by path (deployments before the directory index) keep
working after the deploy and are migrated by upkeep: the app reads and moves them meanwhile,
and after the round no old key is left and records agree with EFS."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from hycloud_core.store.dir_index import LAYOUT_SK
from hycloud_core.store.old_layout import old_file_key
from tests.e2e.conftest import _make_user
from tests.e2e.invariants import records, records_disagreeing

pytestmark = [pytest.mark.e2e]

FILES = {"/m/a.txt": b"alpha", "/m/sub/b.txt": b"beta", "/top.txt": b"top"}


def as_before(deployment, uid: str) -> None:
    """Rewrite the namespace's records as today's main wrote them: keyed by path, no index."""
    table = records(deployment).table
    items = table.query(KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": f"NS#{uid}"})
    found = records(deployment).files_under(uid, "/")
    with table.batch_writer() as batch:
        for item in items["Items"]:
            batch.delete_item(Key={"pk": item["pk"], "sk": item["sk"]})
    with table.batch_writer() as batch:
        for record in found:
            attrs = {k: v for k, v in record.items() if k not in ("pk", "sk", "path")}
            batch.put_item(Item={**old_file_key(uid, record["path"]), **attrs})


def old_keys(deployment, uid: str) -> list[str]:
    table = records(deployment).table
    items = table.query(KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": f"NS#{uid}"})
    return sorted(i["sk"] for i in items["Items"] if i["sk"].startswith("F#/"))


def written_before(deployment, uid: str, ns_dir: Path) -> None:
    """A namespace as today's main leaves it: files on EFS, records keyed by path, no layout item
    (made before the app reads anything of the user: a namespace found migrated stays so)."""
    table = records(deployment).table
    table.delete_item(Key={"pk": f"NS#{uid}", "sk": LAYOUT_SK})
    for path, data in FILES.items():
        host = ns_dir / path.lstrip("/")
        host.parent.mkdir(parents=True, exist_ok=True)
        host.write_bytes(data)
        attrs = {"kind": "small", "size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "mtime": 1}
        table.put_item(Item={**old_file_key(uid, path), **attrs})


def test_records_keyed_by_path_are_read_moved_and_migrated_by_upkeep(deployment):
    user = _make_user(deployment, "migrate")
    written_before(deployment, user.ns_key, user.ns_dir())
    sdk = user.sdk()
    assert old_keys(deployment, user.ns_key) == ["F#/m/a.txt", "F#/m/sub/b.txt", "F#/top.txt"]
    sdk.mv("/m", "/moved")  # before the migration: the old records move with the folder
    sdk.put_bytes("/top.txt", b"top again")  # replaces its old record
    assert records_disagreeing(deployment, user.ns_key, user.ns_dir()) == []
    assert old_keys(deployment, user.ns_key) == []
    as_before(deployment, user.ns_key)
    done = deployment.upkeep(walk=False, migrate={"users": [user.ns_key]})["records_migrated"]
    assert done["records"] == 3 and done["complete"], done
    assert old_keys(deployment, user.ns_key) == []
    layout = records(deployment).table.get_item(Key={"pk": f"NS#{user.ns_key}", "sk": LAYOUT_SK})["Item"]
    assert layout["version"] == 2
    assert records_disagreeing(deployment, user.ns_key, user.ns_dir()) == []
    assert sdk.get_bytes("/moved/sub/b.txt") == b"beta" and sdk.get_bytes("/top.txt") == b"top again"
