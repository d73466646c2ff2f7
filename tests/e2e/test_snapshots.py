"""Snapshots on the deployed cloud: a snapshot of a small tree with one large file (S3) stays as
it was while the folder is overwritten and emptied, refuses a write (403), and restores to the
original place byte for byte (sha256 equal), what was there going to the trash. The web app
makes one of the folder shown and restores it at another path with Restore to…. A snapshot of
a tree larger than one request copies answers at once (202) with its job, and writes racing the
job (overwrites, deletes, a folder moved away and another removed, new files) leave it as the tree
was at its moment, file for file on EFS and through the API."""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from hycloud_core.constants import MiB
from tests.e2e.webdriving import click, dialog_ok, logged_in, wait_for

FOLDERS, FILES = 12, 25  # 300 files: past the entries one request copies (tree_inline_limit, 200)

pytestmark = pytest.mark.e2e


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_snapshot_is_unchanged_by_later_writes_refuses_writes_and_restores_byte_exact(alice, tmp_path):
    sdk, top, name = alice.sdk(), f"/snap-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    small = {f"{top}/a.txt": os.urandom(700), f"{top}/sub/b.txt": os.urandom(3000), f"{top}/sub/c": b""}
    for path, data in small.items():
        sdk.put_bytes(path, data, parents=True)
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(2 * MiB + 4096))  # above the small-file threshold: an S3 object
    sdk.put(big, f"{top}/sub/big.bin")
    before = {**{p: sha(d) for p, d in small.items()}, f"{top}/sub/big.bin": sha(big.read_bytes())}

    made = json.loads(alice.cli("--json", "snapshot", "create", top, "--name", name).stdout)
    assert (made["name"], made["path"], made["files"], made["state"]) == (name, top, 4, "ready")

    sdk.put_bytes(f"{top}/a.txt", b"overwritten")  # later writes: an overwrite, deletes, a new large file
    sdk.rm(f"{top}/sub/b.txt")
    sdk.rm(f"{top}/sub/big.bin")
    (tmp_path / "other.bin").write_bytes(os.urandom(2 * MiB + 1))
    sdk.put(tmp_path / "other.bin", f"{top}/sub/big.bin")

    snaps = sdk.snapshots
    assert sorted(e["name"] for e in snaps.ls(name, "/sub")) == ["b.txt", "big.bin", "c"]
    assert sha(snaps.get_bytes(name, "/a.txt")) == before[f"{top}/a.txt"]
    assert sha(snaps.get_bytes(name, "/sub/big.bin")) == before[f"{top}/sub/big.bin"]
    refused = alice.api().call("PUT", f"/v1/snapshots/{name}/files", params={"path": "/a.txt"}, data=b"x")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "snapshot-read-only"
    taken = alice.api().call("POST", f"/v1/snapshots/{name}/restore", json={})
    assert taken.status_code == 409 and taken.json()["error"]["code"] == "already-exists"

    alice.cli("snapshot", "restore", name, "--replace")
    assert {p: sha(sdk.get_bytes(p)) for p in before} == before
    assert any(i["path"] == top for i in sdk.trash()["items"])  # what was replaced is in the trash

    alice.cli("snapshot", "rm", name)
    assert name not in [s["name"] for s in snaps.list()["snapshots"]]


def _local_tree(root: Path) -> dict[str, bytes]:
    tree = {
        f"/d{d:02d}/f{f:02d}.txt": os.urandom(64 + d * FILES + f)
        for d in range(FOLDERS)
        for f in range(FILES)
    }
    for rel, data in tree.items():
        (root / rel[1:]).parent.mkdir(parents=True, exist_ok=True)
        (root / rel[1:]).write_bytes(data)
    return tree


def _snapshot_files(alice, snap_id: str) -> dict[str, str]:
    """The snapshot's folder on EFS: each file's sha256, by its path within the snapshot."""
    area = alice.deployment.efs_root() / "snapshots" / alice.ns_key / snap_id
    return {"/" + str(p.relative_to(area)): sha(p.read_bytes()) for p in area.rglob("*") if p.is_file()}


def test_a_large_tree_is_snapshotted_at_once_and_writes_racing_its_job_leave_it_as_it_was(alice, tmp_path):
    sdk, top, name = alice.sdk(), f"/snapjob-{uuid.uuid4().hex[:8]}", f"j-{uuid.uuid4().hex[:8]}"
    tree = _local_tree(tmp_path / "tree")
    alice.cli("put", "-r", str(tmp_path / "tree"), top)

    started = time.monotonic()
    made = alice.api().call("POST", "/v1/snapshots", json={"path": top, "name": name})
    answered = time.monotonic() - started
    assert made.status_code == 202, made.text
    snap, job = made.json()["snapshot"], made.json()["job"]
    assert (snap["state"], job["op"], job["state"]) == ("making", "snapshot", "running")
    assert sha(sdk.snapshots.get_bytes(name, "/d11/f24.txt")) == sha(tree["/d11/f24.txt"])  # readable at once
    sdk.put_bytes(f"{top}/d11/f24.txt", b"overwritten")  # writes while the job copies
    sdk.rm(f"{top}/d10/f00.txt")
    sdk.mv(f"{top}/d09", f"{top}/moved")
    sdk.put_bytes(f"{top}/moved/f00.txt", b"changed after it moved")
    sdk.rmdir(f"{top}/d08", recursive=True)
    sdk.put_bytes(f"{top}/d07/new.txt", b"came since")
    sdk.put_bytes(f"{top}/d00/f00.txt", b"overwritten too")

    ended = sdk.snapshots.get(name)
    for _ in range(300):  # the job's end, bounded
        if ended["state"] == "ready":
            break
        time.sleep(0.2)
        ended = sdk.snapshots.get(name)
    assert (ended["state"], ended["files"]) == ("ready", FOLDERS * FILES)
    assert _snapshot_files(alice, snap["id"]) == {rel: sha(data) for rel, data in tree.items()}
    for rel in ("/d11/f24.txt", "/d10/f00.txt", "/d09/f00.txt", "/d08/f03.txt", "/d00/f00.txt"):
        assert sha(sdk.snapshots.get_bytes(name, rel)) == sha(tree[rel])
    assert sdk.get_bytes(f"{top}/moved/f00.txt") == b"changed after it moved"  # the writes all landed
    print(f"snapshot of {FOLDERS * FILES} files answered in {answered * 1000:.0f} ms")


def test_the_web_app_snapshots_the_folder_shown_and_restores_it_elsewhere(
    deployment, alice, tmp_path_factory
):
    sdk, folder, name = alice.sdk(), f"/wsnap-{uuid.uuid4().hex[:8]}", f"w-{uuid.uuid4().hex[:8]}"
    data = os.urandom(900)
    sdk.put_bytes(f"{folder}/f.bin", data, parents=True)
    notice = lambda text: lambda d: text in d.find_element(By.ID, "notice").text  # noqa: E731
    with logged_in(deployment, tmp_path_factory, alice.key) as browser:
        click(browser, folder[1:], "a.open")
        wait_for(browser, lambda d: d.find_element(By.ID, "crumbs").text.endswith(folder[1:]), "folder shown")
        browser.find_element(By.ID, "snapshots-make").click()
        dialog_ok(browser, name)
        wait_for(browser, notice(f"snapshot {name} of {folder}: 1 file(s)"), "the snapshot made")
        sdk.put_bytes(f"{folder}/f.bin", b"changed after the snapshot")
        browser.find_element(By.ID, "snapshots-open").click()
        mine = f'#snapshots-table tr[data-name="{name}"]'
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, mine), "the snapshot listed")
        browser.find_element(By.CSS_SELECTOR, f"{mine} button.restore-to").click()
        dialog_ok(browser, f"{folder}-back")
        wait_for(browser, notice(f"restored {name} at {folder}-back"), "the snapshot restored")
    assert sha(sdk.get_bytes(f"{folder}-back/f.bin")) == sha(data)
    sdk.snapshots.rm(name)
