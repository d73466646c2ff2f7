"""`--via auto`, the default: a first download goes direct; once the client has transferred a
version, a plain `get` or `put` of the next one sends only a delta across the client's link.

The CLI reaches the cloud through the fault proxy, which here also plays a slow client link
(one link shared by all connections), so the rates the client measures are those of a link where
eq. 2 has something to decide; the proxy counts every byte that crosses it.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

from hycloud_core import content
from tests.e2e.conftest import HYCLOUD, User
from tests.e2e.fault_proxy import Exchange, FaultProxy

pytestmark = pytest.mark.e2e
MiB = 1024 * 1024
SIZE = 16 * MiB
LINK_RATE = 4e6  # bytes/s, about 32 Mbit/s


def edit(data: bytes, seed: int, edits: int = 12) -> bytes:
    rnd, out = random.Random(seed), bytearray(data)
    for _ in range(edits):
        at = rnd.randrange(len(out) - 5000)
        out[at : at + 1000] = rnd.randbytes(1000)
    return bytes(out)


class SlowLink(FaultProxy):
    """The fault proxy as one client link of LINK_RATE: each body takes its time on the wire."""

    def __init__(self) -> None:
        self.wire = threading.Lock()
        super().__init__(on_request=self._carry_up, on_response=self._carry_down)

    def _carry(self, n: int) -> None:
        with self.wire:
            time.sleep(n / LINK_RATE)

    def _carry_up(self, x: Exchange) -> None:
        self._carry(len(x.body))

    def _carry_down(self, x: Exchange) -> None:
        self._carry(len(x.response_body))

    def link_bytes(self) -> int:
        return sum(len(x.body) + len(x.response_body) for x in self.forwarded)


def hycloud(user: User, proxy: SlowLink, state: Path, *args: str) -> subprocess.CompletedProcess:
    env = user.cli_env(**proxy.env(), HYCLOUD_STATE=str(state))
    result = subprocess.run([HYCLOUD, *args], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def rates_of(state: Path) -> dict[str, float]:
    """The rates eq. 2 decides with, as the client kept them (the latest of each kind)."""
    with sqlite3.connect(state) as db:
        rows = db.execute("SELECT kind, rate FROM rates ORDER BY at").fetchall()
    return {kind.rsplit(" ", 1)[-1]: rate for kind, rate in rows}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def v1() -> bytes:
    rnd = random.Random(15)
    return b"".join(rnd.randbytes(MiB) for _ in range(SIZE // MiB))


def test_first_get_is_direct_then_plain_get_and_put_send_deltas(alice, v1, tmp_path, monkeypatch):
    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "sdk-state.sqlite3"))
    remote, state, local = f"/auto-{tmp_path.name}/f.bin", tmp_path / "state.sqlite3", tmp_path / "f.bin"
    sdk = alice.sdk()
    sdk.mkdir(remote.rsplit("/", 1)[0], parents=True)
    (tmp_path / "v1").write_bytes(v1)
    sdk.put(tmp_path / "v1", remote)
    (tmp_path / "other").write_bytes(random.Random(16).randbytes(SIZE))  # v1 itself would dedup: nothing sent
    with SlowLink() as proxy:  # the client measures its upload rate on this link, not the paper's
        hycloud(alice, proxy, state, "put", str(tmp_path / "other"), remote + ".rate")
    assert rates_of(state)["up"] < 1.5 * LINK_RATE, rates_of(state)

    with SlowLink() as proxy:
        first = json.loads(hycloud(alice, proxy, state, "--json", "get", remote, str(local)).stdout)
        assert first["mode"] == "direct"
        assert proxy.link_bytes() >= SIZE
        assert sha(local.read_bytes()) == sha(v1)

    v2 = edit(v1, 1)  # someone else edits the file in the cloud
    (tmp_path / "v2").write_bytes(v2)
    sdk.put(tmp_path / "v2", remote)
    with SlowLink() as proxy:
        second = hycloud(alice, proxy, state, "-v", "get", remote, str(local))
        assert "mode delta" in " ".join(second.stdout.split()), rates_of(state)
        assert proxy.link_bytes() < 0.05 * SIZE, proxy.link_bytes()
    assert sha(local.read_bytes()) == sha(v2)

    v3 = edit(v2, 2)  # the user edits the downloaded file in place: the old bytes are gone
    local.write_bytes(v3)
    with SlowLink() as proxy:
        put = hycloud(alice, proxy, state, "-v", "put", str(local), remote)
        assert "mode delta" in " ".join(put.stdout.split()), rates_of(state)
        assert proxy.link_bytes() < 0.05 * SIZE, proxy.link_bytes()
    assert sdk.stat(remote)["content_hash"] == content.hash_file(local)[0]
    sdk.get(remote, tmp_path / "back.bin", via="direct")
    assert sha((tmp_path / "back.bin").read_bytes()) == sha(v3)


def test_get_of_an_unchanged_file_and_bad_via(alice, v1, tmp_path):
    remote, state, local = f"/auto-{tmp_path.name}/g.bin", tmp_path / "state.sqlite3", tmp_path / "g.bin"
    with SlowLink() as proxy:
        local.write_bytes(v1)
        put = json.loads(hycloud(alice, proxy, state, "--json", "put", "-p", str(local), remote).stdout)
        assert put["mode"] == "direct"
        sent = proxy.link_bytes()
        again = json.loads(hycloud(alice, proxy, state, "--json", "get", remote, str(local)).stdout)
        assert again["mode"] == "same"
        assert proxy.link_bytes() - sent < 64 * 1024
    bad = subprocess.run(
        [HYCLOUD, "get", "--via", "teleport", remote, str(local)],
        env={**os.environ, "HYCLOUD_ENDPOINT": alice.deployment.api_url, "HYCLOUD_API_KEY": alice.key},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode != 0 and "--via" in bad.stderr + bad.stdout
