"""A 640 MiB file with scattered edits moves as a delta both ways, though its checksum list (5 MB)
and its delta are each larger than one API request (4 MiB): they go through S3 by presigned URL.
640 MiB is the size whose checksum list is over the limit with a margin (1 GiB showed no more).

`hycloud get` and `hycloud put` through the fault proxy, which counts the bytes on the link, with
`--via delta`: eq. 2's choice depends on the rates this run measures (a loaded machine's slow job
can rightly make a direct transfer on the fast local link look better); the sizes are what is tested.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.e2e.conftest import HYCLOUD, User
from tests.e2e.fault_proxy import FaultProxy

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.xdist_group("large-files"),
]  # one at a time: disk
MiB = 1024 * 1024
SIZE = 640 * MiB
EDIT = 16 * 1024


def write_file(path: Path, seed: int, size: int = SIZE) -> None:
    """`size` (64 MiB steps) of seeded random bytes, quickly (numpy's generator): nothing repeats,
    so the checksum list does not compress (8 MB per GiB)."""
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        for _ in range(size // (64 * MiB)):
            f.write(rng.bytes(64 * MiB))


def scatter_edits(path: Path, seed: int, edits: int = 400) -> None:
    """Overwrite `edits` random 16 KiB stretches in place: ~6 MiB of new bytes all over the file."""
    rnd, size = random.Random(seed), os.path.getsize(path)
    with open(path, "r+b") as f:
        for _ in range(edits):
            f.seek(rnd.randrange(size - EDIT))
            f.write(rnd.randbytes(EDIT))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while piece := f.read(8 * MiB):
            digest.update(piece)
    return digest.hexdigest()


def hycloud(user: User, proxy: FaultProxy | None, state: Path, *args: str) -> dict:
    env = user.cli_env(**(proxy.env() if proxy else {}), HYCLOUD_STATE=str(state))
    result = subprocess.run([HYCLOUD, "--json", *args], env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def link_bytes(proxy: FaultProxy) -> int:
    return sum(len(x.body) + len(x.response_body) for x in proxy.forwarded)


def test_a_large_file_moves_as_a_delta_both_ways(alice, tmp_path, monkeypatch):
    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "sdk-state.sqlite3"))
    remote, state = f"/large-{tmp_path.name}/big.bin", tmp_path / "state.sqlite3"
    cloud_copy, local = tmp_path / "cloud.bin", tmp_path / "big.bin"
    write_file(cloud_copy, 1)
    alice.sdk().put(cloud_copy, remote, parents=True)
    write_file(local, 1)
    scatter_edits(local, 2)  # the local copy: a version the cloud never had

    with FaultProxy() as proxy:
        got = hycloud(alice, proxy, state, "get", "--via", "delta", remote, str(local))
        assert got["mode"] == "delta" and got["kind"] == "rsync", got
        assert got["sent_bytes"] > 4 * MiB and got["received_bytes"] > 4 * MiB, got
        assert link_bytes(proxy) < 0.10 * SIZE, link_bytes(proxy)
        assert any("/staging/" in x.url or "staging%2F" in x.url for x in proxy.forwarded)
    assert sha256(local) == sha256(cloud_copy)

    scatter_edits(local, 3)  # the user edits the file in place
    with FaultProxy() as proxy:
        put = hycloud(alice, proxy, state, "put", "--via", "delta", str(local), remote)
        assert put["mode"] == "delta" and put["sent_bytes"] > 4 * MiB, put
        assert link_bytes(proxy) < 0.10 * SIZE, link_bytes(proxy)
    cloud_copy.unlink()
    alice.sdk().get(remote, tmp_path / "back.bin", via="direct")
    assert sha256(tmp_path / "back.bin") == sha256(local)
