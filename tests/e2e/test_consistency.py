"""Races that once lost acknowledged files or left EFS and records apart (issue: trust, items 2 and 3)."""

from __future__ import annotations

import hashlib
import os
import threading
from collections import Counter

import pytest

from hycloud.sdk import bundles
from tests.e2e.invariants import merkle_tree_on_efs, records_disagreeing, temporary_files, unreadable_links

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
LARGE = 2 * 1024 * 1024 + 4096


def _run(workers: list) -> None:
    threads = [threading.Thread(target=w) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads)


@pytest.mark.exclusive
def test_tree_copies_racing_overwrites_lose_no_file(bob, tmp_path):
    """Copies of /a into /cK while other requests overwrite files inside /a: afterwards every link's
    content is stored, also after removing most of them and collecting garbage."""
    sdk, api = bob.sdk(), bob.api()
    sdk.mkdir("/src")
    sdk.mkdir("/a")
    hashes = []
    for i in range(3):
        local = tmp_path / f"l{i}"
        local.write_bytes(os.urandom(LARGE))
        hashes.append(sdk.put(str(local), f"/src/l{i}")["content_hash"])
    for n in range(6):
        sdk.cp("/src/l0", f"/a/x{n}")
    statuses: Counter = Counter()
    lock = threading.Lock()

    def record(status: int) -> None:
        with lock:
            statuses[status] += 1

    def tree_copier(k: int) -> None:  # 12 tree copies, each overlapping several overwrites
        for j in range(4):
            record(api.call("POST", "/v1/copy", json={"src": "/a", "dst": f"/c{k}-{j}"}).status_code)

    def overwriter(w: int) -> None:  # 75 overwrites of the six files the copies read
        for j in range(15):
            src = f"/src/l{(w + j) % 3}"
            record(api.call("POST", "/v1/copy", json={"src": src, "dst": f"/a/x{(w + j) % 6}"}).status_code)

    _run([lambda k=k: tree_copier(k) for k in range(3)] + [lambda w=w: overwriter(w) for w in range(5)])
    assert not [s for s in statuses if s >= 500], statuses
    assert sum(n for s, n in statuses.items() if s < 300) >= 40, statuses
    assert unreadable_links(bob.deployment, bob.ns_dir()) == []
    assert records_disagreeing(bob.deployment, bob.ns_key, bob.ns_dir()) == []
    copies = sorted(e["name"] for e in sdk.ls("/") if e["name"].startswith("c"))
    for name in copies[: len(copies) - 2]:
        sdk.rmdir(f"/{name}", recursive=True)
    sdk.rmdir("/a", recursive=True)
    sdk.rmdir("/src", recursive=True)
    bob.deployment.upkeep(grace_s=0)
    assert unreadable_links(bob.deployment, bob.ns_dir()) == []
    originals = {hashlib.sha256((tmp_path / f"l{i}").read_bytes()).hexdigest() for i in range(3)}
    for name in copies[-2:]:
        for entry in sdk.ls(f"/{name}"):
            target = tmp_path / f"{name}-{entry['name']}"
            sdk.get(f"/{name}/{entry['name']}", str(target))
            assert hashlib.sha256(target.read_bytes()).hexdigest() in originals


def test_writes_into_a_folder_moving_back_and_forth(alice, tmp_path):
    """Six writers put files into /d/p, which holds a tree of 600 files (past the inline limit of
    tree jobs), while a seventh moves p <-> q, each move inline: no 5xx, no temporary file left,
    every record agrees with EFS, every acknowledged file is where the moves took it, and the
    Merkle root kept is the one EFS gives."""
    sdk, api = alice.sdk(), alice.api()
    sdk.mkdir("/d/p", parents=True)
    local = tmp_path / "tree"
    for i in range(600):
        (local / f"g{i % 6}").mkdir(parents=True, exist_ok=True)
        (local / f"g{i % 6}" / f"f{i}").write_bytes(f"tree {i}".encode())
    pairs = [(f, "/d/p/t/" + f.relative_to(local).as_posix()) for f in local.rglob("f*")]
    bundles.raise_first_error(bundles.put_files(sdk, pairs, parallel=8))
    acknowledged: dict[str, bytes] = {}
    statuses: Counter = Counter()
    lock = threading.Lock()

    def writer(t: int) -> None:
        for i in range(8):
            name, data = f"f{t}-{i}", f"{t}:{i}:".encode() * 50
            response = api.call(
                "PUT",
                "/v1/files",
                params={"path": f"/d/p/{name}"},
                data=data,
                headers={"content-type": "application/octet-stream"},
            )
            with lock:
                statuses[response.status_code] += 1
                if response.status_code == 201:
                    acknowledged[name] = data

    def mover() -> None:
        for j in range(12):
            src, dst = ("/d/p", "/d/q") if j % 2 == 0 else ("/d/q", "/d/p")
            response = api.call("POST", "/v1/move", json={"src": src, "dst": dst})
            with lock:
                statuses[response.status_code] += 1

    _run([lambda t=t: writer(t) for t in range(6)] + [mover])
    assert not [s for s in statuses if s >= 500], statuses
    assert temporary_files(alice.ns_dir()) == []
    assert records_disagreeing(alice.deployment, alice.ns_key, alice.ns_dir()) == []
    folder = "p" if (alice.ns_dir() / "d" / "p").is_dir() else "q"
    for name, data in acknowledged.items():
        assert sdk.get_bytes(f"/d/{folder}/{name}") == data
    assert acknowledged, statuses
    assert statuses[202] == 0, statuses  # no move became a job
    assert len(sdk.ls(f"/d/{folder}/t/g0")) == 100
    assert sdk.merkle_root() == merkle_tree_on_efs(alice.ns_dir()).hash.hex()
