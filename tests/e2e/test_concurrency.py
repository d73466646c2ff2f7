"""Randomized concurrency against the deployment: 8 clients x 75 mixed operations, then invariants.

Each client owns a private folder, where it knows exactly what every path must hold (its own
operations are sequential), and shares a few folders with the others, where only a weaker rule can
hold: a path holds a value some acknowledged write put somewhere. Every value written is unique,
so a file's sha256 names the write that made it. Seeded and bounded; the counts are printed.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import pytest

from hycloud.http import new_session
from hycloud_core.errors import HyCloudError, NotFoundError
from tests.e2e.invariants import (
    efs_files,
    merkle_tree_on_efs,
    records_disagreeing,
    stored_objects,
    temporary_files,
    unreadable_links,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.exclusive]
CLIENTS, OPS, SEED = 8, 75, 20261123  # 600 operations (the trust issue's minimum), each with its ancestors
LARGE = 2 * 1024 * 1024 + 1024
SHARED = ["/s/d0", "/s/d1", "/s/d2"]
UNKNOWN = "weak"  # a private path whose content came from the shared area: any acknowledged value


@dataclass
class Shared:
    lock: threading.Lock = field(default_factory=threading.Lock)
    statuses: Counter = field(default_factory=Counter)
    ops: Counter = field(default_factory=Counter)
    acknowledged: set[str] = field(default_factory=set)  # sha256 of every value a 2xx write stored

    def status(self, code: int) -> None:
        with self.lock:
            self.statuses[code] += 1


class Client:
    """One client: an SDK without retries (every status is seen) and its private model."""

    def __init__(self, n: int, user, shared: Shared, tmp: Path) -> None:
        self.n, self.rng, self.shared, self.tmp = n, random.Random(SEED + n), shared, tmp
        self.sdk = user.sdk()
        session = new_session(retries=0)
        session.headers.update(self.sdk.http.session.headers)
        session.hooks["response"].append(lambda r, *a, **k: shared.status(r.status_code))
        session.hooks["response"].append(self._log)
        self.requests: list[str] = []  # what this client asked and was answered, for a failure
        self.sdk.http.session = session
        self.home = f"/p{n}"
        self.model: dict[str, str | None] = {}  # private path -> sha256, UNKNOWN, or None (absent)
        self.locals: dict[str, Path] = {}  # private large file -> local copy of its current value
        self.count = 0

    def _log(self, response, *args, **kwargs) -> None:
        request = response.request
        body = request.body if isinstance(request.body, str | None) else "<bytes>"
        line = f"{time.monotonic():.2f} client {self.n} {request.method} {unquote(request.url)} {body}"
        self.requests.append(f"{line} -> {response.status_code} {response.text[:160]!r}")

    # --- values ------------------------------------------------------------------------------
    def value(self, large: bool) -> bytes:
        self.count += 1
        tag = f"client {self.n} value {self.count} ".encode()
        if not large:
            return tag * self.rng.randint(1, 40)
        return tag + self.rng.randbytes(LARGE)

    def put(self, path: str, large: bool) -> str | None:
        data = self.value(large)
        digest = hashlib.sha256(data).hexdigest()
        if large:
            local = self.tmp / f"c{self.n}-{self.count}"
            local.write_bytes(data)
            self.sdk.put(local, path)
            self.locals[path] = local
        else:
            self.sdk.put_bytes(path, data)
        with self.shared.lock:
            self.shared.acknowledged.add(digest)
        return digest

    # --- one random operation ---------------------------------------------------------------
    def step(self) -> None:
        kind = self.rng.choices(
            ["put", "put_large", "cp", "mv", "rm", "tree", "rmtree", "mkdir", "delta", "shared"],
            weights=[22, 2, 10, 10, 8, 4, 3, 6, 1, 34],
        )[0]
        self.shared.ops[kind] += 1
        try:
            getattr(self, f"op_{kind}")()
        except HyCloudError as err:
            if err.status >= 500:
                raise

    def _private(self) -> str:
        return f"{self.home}/d{self.rng.randrange(2)}/f{self.rng.randrange(4)}"

    def op_put(self) -> None:
        path = self._private()
        self._set(path, self.put(path, large=False))

    def op_put_large(self) -> None:
        path = self._private()
        self._set(path, self.put(path, large=True))

    def _copy(self, call) -> str | None:
        """cp or mv (`call`) from one private path to another, the model following; the source,
        or None when there was nothing to do (the same path twice, or no file there)."""
        src, dst = self._private(), self._private()
        if src == dst or self.model.get(src) is None:
            return None
        call(src, dst)
        self._set(dst, self.model[src], self.locals.get(src))
        return src

    def op_cp(self) -> None:
        self._copy(self.sdk.cp)

    def op_mv(self) -> None:
        src = self._copy(self.sdk.mv)
        if src is not None:
            self._set(src, None)

    def op_rm(self) -> None:
        path = self._private()
        if self.model.get(path) is None:
            return
        self.sdk.rm(path)
        self._set(path, None)

    def op_tree(self) -> None:
        """Copy a shared folder (changing under other clients) into the private area."""
        dst = f"{self.home}/t{self.rng.randrange(2)}"
        self._remove_tree(dst)
        self.sdk.cp(self.rng.choice(SHARED), dst)
        for entry in self.sdk.ls(dst):
            if entry["type"] == "file":
                self._set(f"{dst}/{entry['name']}", UNKNOWN)

    def op_rmtree(self) -> None:
        folder = f"{self.home}/d{self.rng.randrange(2)}"
        self._remove_tree(folder)
        self.sdk.mkdir(folder, parents=True)

    def op_mkdir(self) -> None:
        folder = f"{self.home}/e{self.rng.randrange(3)}"
        self.sdk.mkdir(folder, parents=True)
        if self.rng.random() < 0.5:
            self.sdk.rmdir(folder)

    def op_delta(self) -> None:
        path = next((p for p in sorted(self.locals) if self.model.get(p) not in (None, UNKNOWN)), None)
        if path is None:
            return self.op_put_large()
        base = self.locals[path]
        data = bytearray(base.read_bytes())
        data[self.rng.randrange(len(data))] ^= 0xFF
        data[:40] = f"client {self.n} delta {self.count:8d} ".encode()[:40].ljust(40)
        self.count += 1
        local = self.tmp / f"c{self.n}-{self.count}-delta"
        local.write_bytes(bytes(data))
        self.sdk.put(local, path, base=base, force_delta=True)
        digest = hashlib.sha256(data).hexdigest()
        with self.shared.lock:
            self.shared.acknowledged.add(digest)
        self._set(path, digest, local)

    def op_shared(self) -> None:
        folder = self.rng.choice(SHARED)
        path = f"{folder}/f{self.rng.randrange(5)}"
        action = self.rng.choices(["put", "cp", "mv", "rm", "rmtree"], weights=[50, 20, 15, 12, 3])[0]
        if action == "put":
            self.put(path, large=self.rng.random() < 0.03)
        elif action in ("cp", "mv"):
            dst = f"{self.rng.choice(SHARED)}/f{self.rng.randrange(5)}"
            if dst != path:
                (self.sdk.cp if action == "cp" else self.sdk.mv)(path, dst)
        elif action == "rm":
            self.sdk.rm(path)
        else:
            try:
                self.sdk.rmdir(folder, recursive=True)
            finally:
                self.sdk.mkdir(folder, parents=True)

    def _set(self, path: str, digest: str | None, local: Path | None = None) -> None:
        self.model[path] = digest
        if local is not None and digest not in (None, UNKNOWN):
            self.locals[path] = local
        else:
            self.locals.pop(path, None)

    def _remove_tree(self, folder: str) -> None:
        try:
            self.sdk.rmdir(folder, recursive=True)
        except HyCloudError as err:
            if err.status != 404:
                raise
        self._drop_tree(folder)

    def _drop_tree(self, folder: str) -> None:
        for path in [p for p in self.model if p.startswith(folder + "/")]:
            self._set(path, None)

    def run(self, errors: list) -> None:
        try:
            for sub in ("d0", "d1"):
                self.sdk.mkdir(f"{self.home}/{sub}", parents=True)
            for _ in range(OPS):
                self.step()
        except Exception as err:  # noqa: BLE001 - reported by the test
            errors.append(f"client {self.n}: {type(err).__name__}: {err}")


def _content_sha(sdk, path: str, tmp: Path, missing: str | None = None) -> str:
    """The sha256 of what the path holds; `missing` stands for a path that does not exist."""
    target = tmp / ("check-" + hashlib.sha1(path.encode()).hexdigest())
    try:
        sdk.get(path, target)
    except NotFoundError:
        if missing is None:
            raise
        return missing
    return hashlib.sha256(target.read_bytes()).hexdigest()


def _history(client: Client, path: str) -> str:
    """The requests of the client that named the path or a folder above it."""
    parts = path.split("/")
    prefixes = {"/".join(parts[:i]) for i in range(3, len(parts) + 1)}  # below the home
    lines = [line for line in client.requests if any(p in line for p in prefixes)]
    return f"{path}: the client's requests about it and its folders:\n" + "\n".join(lines[-40:])


def test_randomized_concurrent_clients_keep_every_acknowledged_write(deployment, carol, tmp_path):
    shared = Shared()
    setup = carol.sdk()
    for folder in SHARED:
        setup.mkdir(folder, parents=True)
    clients = [Client(n, carol, shared, tmp_path) for n in range(CLIENTS)]
    errors: list[str] = []
    started = time.monotonic()
    threads = [threading.Thread(target=c.run, args=(errors,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=1500)
    elapsed = time.monotonic() - started
    assert not any(t.is_alive() for t in threads), "clients did not finish in time"
    print(json.dumps({"seconds": round(elapsed, 1), "ops": shared.ops, "statuses": shared.statuses}))
    assert errors == []
    assert sum(shared.ops.values()) == CLIENTS * OPS
    assert not [s for s in shared.statuses if s >= 500], shared.statuses

    on_efs = efs_files(carol.ns_dir())
    for client in clients:  # private areas: exactly the model
        for path, digest in sorted(client.model.items()):
            if digest is None:
                assert path not in on_efs, _history(client, path)
            elif digest == UNKNOWN:
                assert _content_sha(setup, path, tmp_path) in shared.acknowledged, _history(client, path)
            else:
                assert _content_sha(setup, path, tmp_path, missing="absent") == digest, _history(client, path)
    for path, info in on_efs.items():  # everywhere: only acknowledged values
        if path.startswith("/s/"):
            assert _content_sha(setup, path, tmp_path) in shared.acknowledged, path
        assert info["kind"] in ("small", "large")
    assert temporary_files(carol.ns_dir()) == []
    assert records_disagreeing(carol.deployment, carol.ns_key, carol.ns_dir()) == []
    assert unreadable_links(carol.deployment, carol.ns_dir()) == []
    assert setup.merkle_root() == merkle_tree_on_efs(carol.ns_dir()).hash.hex()

    result = deployment.upkeep(grace_s=0)
    assert result["collected"]["skipped"] is None, result
    assert result["records_written"] == [] and result["records_removed"] == []
    assert unreadable_links(carol.deployment, carol.ns_dir()) == []
    linked = _linked_anywhere(deployment)
    for content_hash in stored_objects(deployment):
        record = deployment.object_record(content_hash)
        kept = record is not None and int(record.get("keep_until", 0)) > time.time()
        assert content_hash in linked or kept, f"orphan object {content_hash}"


def _linked_anywhere(deployment) -> set[str]:
    """Every content hash a link file in any namespace or any user's trash names (a removed
    file keeps its content until its trash item is purged), retained history included."""
    linked = set()
    for area in ("ns", "trash"):
        folder = deployment.efs_root() / area
        for ns_dir in folder.iterdir() if folder.is_dir() else ():
            for info in efs_files(ns_dir).values():
                if info["kind"] == "large":
                    linked.add(info["content_hash"])
    return linked
