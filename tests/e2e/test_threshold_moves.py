"""A file moved across the small-file threshold by the upkeep (fs/threshold_moves.py) on the deployed
cloud, EFS -> S3 -> EFS: its bytes (sha256), content hash, kept versions and share link are the
same on each side, and the usage report's storage classes add up to the stored bytes."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time

import pytest
import requests

from hycloud.cli.usage import class_rows
from tests.e2e.conftest import _make_user

pytestmark = [pytest.mark.e2e]


def _is_link(path) -> bool:
    return bool(os.lstat(path).st_mode & stat.S_ISVTX)


def _moves(deployment, user, **options) -> dict:
    """One move round for this user alone (other tests' files stay where they are)."""
    event = {"users": [user.ns_key], "settle_s": 0, **options}
    return deployment.upkeep(walk=False, moves=event)["moves"]


def _seen(user, path: str, share_url: str) -> dict:
    """What a user and a link holder see of the file."""
    sdk, api = user.sdk(), user.api()
    entry = api.call("GET", "/v1/stat", params={"path": path}).json()
    shared = requests.get(share_url, timeout=60)
    assert shared.status_code == 200
    return {
        "sha256": hashlib.sha256(sdk.get_bytes(path)).hexdigest(),
        "shared": hashlib.sha256(shared.content).hexdigest(),
        "hash": entry.get("content_hash") or sdk.stat(path).get("content_hash"),
        "size": entry["size"],
        "mtime": entry["mtime"],
        "versions": [v["version"] for v in sdk.versions(path)["versions"]],
    }


def _classes_add_up(user) -> dict:
    usage = user.api().call("GET", "/v1/usage").json()["usage"]
    for store, key in (("EFS", "efs_metered_bytes"), ("S3", "s3_stored_bytes")):
        assert sum(b for name, _, _, b in class_rows(usage) if name.startswith(store)) == usage[key]
    return usage


def test_a_file_moved_across_the_threshold_both_ways_keeps_bytes_hash_history_and_link(deployment):
    user = _make_user(deployment, "moves")
    sdk, path = user.sdk(), "/m/f.bin"
    sdk.mkdir("/m")
    old, data = os.urandom(60_000), os.urandom(90_000)
    sdk.put_bytes(path, old)
    sdk.put_bytes(path, data)  # the first is kept as a version
    share = json.loads(user.cli("--json", "share", path, "--expires", "1h").stdout)
    before = _seen(user, path, share["url"])
    assert before["sha256"] == before["shared"] == hashlib.sha256(data).hexdigest()
    assert len(before["versions"]) == 1
    host = user.ns_dir() / "m" / "f.bin"
    assert not _is_link(host)

    assert _moves(deployment, user, threshold=65_536)["to_s3"] == 1  # the threshold fell under it
    assert _is_link(host)
    assert _seen(user, path, share["url"]) == before
    usage = _classes_add_up(user)
    assert (usage["s3_objects"], usage["s3_bytes"], usage["efs_files"]) == (1, len(data), 0)

    assert _moves(deployment, user)["to_efs"] == 1  # the deployment's threshold (2 MiB) is above it
    assert not _is_link(host) and host.read_bytes() == data
    assert _seen(user, path, share["url"]) == before
    usage = _classes_add_up(user)
    assert (usage["s3_objects"], usage["efs_files"], usage["logical_bytes"]) == (0, 1, len(data))


def test_a_user_whose_mix_favours_a_lower_threshold_gets_it_and_the_upkeep_moves_files_across(deployment):
    """Three 900 KB files written once and never read cost less in S3: the upkeep's round chooses
    512 KiB for this user alone (the guard rails' minimums lowered, as for a test), stores it,
    moves the files, and the controller answers it in whoami and usage (cost/thresholds.py)."""
    user = _make_user(deployment, "chosen")
    sdk = user.sdk()
    sdk.mkdir("/c")
    data = [os.urandom(900_000) for _ in range(3)]
    for i, d in enumerate(data):
        sdk.put_bytes(f"/c/{i}.bin", d)
    hosts = [user.ns_dir() / "c" / f"{i}.bin" for i in range(3)]
    assert not any(_is_link(h) for h in hosts)  # small at the deployment's 2 MiB

    rules = {"users": [user.ns_key], "min_files": 1, "min_days": 0, "settle_s": 0}
    done = deployment.upkeep(walk=False, thresholds=rules)
    assert done["thresholds"]["users"][user.ns_key]["threshold"] == 512 * 1024
    assert done["moves"]["to_s3"] == 3 and all(_is_link(h) for h in hosts)
    assert [hashlib.sha256(sdk.get_bytes(f"/c/{i}.bin")).hexdigest() for i in range(3)] == [
        hashlib.sha256(d).hexdigest() for d in data
    ]
    shown = _eventually(user, "/v1/usage", lambda r: r["threshold"]["source"] == "user")["threshold"]
    assert shown["threshold"] == 512 * 1024 and shown["inputs"]["files"] == 3
    _eventually(user, "/v1/whoami", lambda r: r["small_file_threshold"] == 512 * 1024)


def _eventually(user, route: str, done) -> dict:
    """The route's answer once `done` holds: each warm controller keeps the threshold up to 15 s."""
    deadline = time.monotonic() + 45
    while not done(answer := user.api().call("GET", route).json()):
        assert time.monotonic() < deadline, answer
        time.sleep(3)
    return answer
