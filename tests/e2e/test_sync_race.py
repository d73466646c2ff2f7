"""Devices syncing one folder at the same moment never lose a version a sync acknowledged.

Each push names the version it last saw at the destination (per file, bundle members included);
a push that finds another version there becomes a conflict: the newer by mtime stays at the path
and the other is kept beside it as a conflict copy.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from tests.e2e.conftest import HYCLOUD, _make_user

pytestmark = [pytest.mark.e2e]
LARGE = 3 * 1024 * 1024  # above the small-file threshold: a large upload's commit


@pytest.fixture(scope="module")
def user(deployment):
    return _make_user(deployment, "race")


def _device(user, home: Path, name: str):
    """`sync(src, dst)` with the real CLI as device `name` (its own config and sync state)."""
    env = {
        **os.environ,
        "HYCLOUD_ENDPOINT": user.deployment.api_url,
        "HYCLOUD_API_KEY": user.key,
        "HYCLOUD_CONFIG": str(home / "config.json"),
        "HYCLOUD_STATE": str(home / "state.sqlite3"),
        "HYCLOUD_DEVICE": name,
    }

    def sync(src: str, dst: str) -> dict:
        result = subprocess.run(
            [HYCLOUD, "--json", "sync", src, dst], env=env, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return json.loads(result.stdout)

    return sync


def _at_once(*calls) -> list[dict]:
    barrier, out = threading.Barrier(len(calls)), [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        out[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    return out


def _cloud_versions(sdk, folder: str, name: str) -> set[bytes]:
    """The content at `name` and at every conflict copy of it."""
    names = [
        e["name"] for e in sdk.ls(folder) if e["name"] == name or e["name"].startswith(name + ".conflict-")
    ]
    return {sdk.get_bytes(f"{folder}/{n}") for n in names}


@pytest.mark.parametrize("size", [100, LARGE], ids=["small", "large"])
def test_two_devices_pushing_edits_at_once_keep_both_versions(user, tmp_path, size):
    sdk, folder = user.sdk(), f"/sy-{size}"
    devices = {
        name: (tmp_path / name / "tree", _device(user, tmp_path / name, name)) for name in ("one", "two")
    }
    for local, sync in devices.values():
        local.mkdir(parents=True)
        (local / "a").write_bytes(b"0" * size)
        sync(str(local), "hc:" + folder)
    for round_ in range(3):
        edits = {}
        for i, (name, (local, _)) in enumerate(devices.items()):
            edits[name] = f"{name} {round_} ".encode().ljust(size, b".")
            (local / "a").write_bytes(edits[name])
            os.utime(local / "a", (1_700_000_000 + 10 * round_ + i,) * 2)
        pushes = [lambda d=d: d[1](str(d[0]), "hc:" + folder) for d in devices.values()]
        reports = _at_once(*pushes)
        assert all(r["failed"] == [] for r in reports), reports
        kept = _cloud_versions(sdk, folder, "a")
        assert set(edits.values()) <= kept, f"round {round_}: {reports}"
        assert sdk.get_bytes(f"{folder}/a") == edits["two"]  # the newer by mtime stays at the path
        for local, sync in devices.values():  # both devices take the result before the next round
            sync("hc:" + folder, str(local))
            assert (local / "a").read_bytes() == edits["two"]
