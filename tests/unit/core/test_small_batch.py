"""A bundle's files committed together (moto): each file keeps its own outcome and guarantees."""

from __future__ import annotations

import hashlib
import time

import pytest

from hycloud_core.errors import ConflictError
from hycloud_core.fs import small_batch
from hycloud_core.fs.small_batch import SmallWrite, put_small_batch
from hycloud_core.merkle.exchange import VIRTUAL_ROOT
from hycloud_core.store import locks
from hycloud_core.store.locks import leased_paths
from hycloud_core.store.merkle_records import MerkleRecords, node_key
from hycloud_core.store.quotas import Quota


def _writes(n: int) -> list[SmallWrite]:
    out = []
    for i in range(n):
        data = f"file {i}\n".encode() * (1 + i % 3)
        out.append(SmallWrite(f"/b/d{i % 3}/f{i:03d}", data, hashlib.sha256(data).hexdigest()))
    return out


def test_transactions_stay_within_the_limit_and_keep_the_order():
    paths = sorted((w.path for w in _writes(250)), key=locks._components)
    groups = list(locks._transactions(paths))
    assert [p for g in groups for p in g] == paths and len(groups) >= 3
    assert all(len(g) + len(locks._checked(g)) <= locks.MAX_TRANSACTION for g in groups)


def test_a_busy_path_fails_alone_and_the_rest_commit(moto_filesystems, monkeypatch):
    fs = moto_filesystems.fs("u")
    monkeypatch.setattr(small_batch, "WAIT_S", 0.2)
    fs.records.table.put_item(
        Item={"pk": "LOCK#u", "sk": "/b/d1/f100", "owner": "other", "expires": int(time.time()) + 60}
    )
    writes = _writes(250)
    results = put_small_batch(fs, writes, parents=True)
    busy = [w.path for w, r in zip(writes, results, strict=True) if isinstance(r, ConflictError)]
    assert busy == ["/b/d1/f100"]
    assert all(fs.ns.read(w.path) == w.data for w in writes if w.path not in busy)
    assert leased_paths(fs.records.table, "u") == ["/b/d1/f100"]  # only the other operation's
    assert len(fs.records.files_under("u", "/b")) == 249
    assert Quota(fs.records, "u").report()["files"]["used"] == 249
    tree = MerkleRecords(fs.records.table, "u")
    assert tree.get("/b/d0/f000")["kind"] == "file" and tree.get("/b/d1/f100") is None
    assert "hash" not in fs.records.table.get_item(Key={"pk": "MK#u", "sk": node_key("/b")})["Item"]
    (root,) = tree.answer([VIRTUAL_ROOT])[VIRTUAL_ROOT]
    assert root["hash"] and tree.get("/b")["hash"]  # recomputed on demand, and kept


@pytest.mark.parametrize("overwrite", [False, True])
def test_over_quota_the_files_that_fit_commit(moto_filesystems, overwrite):
    fs = moto_filesystems.fs("u")
    if overwrite:
        put_small_batch(fs, _writes(2), parents=True)
    Quota(fs.records, "u").set_limits(max_files=3)
    writes = _writes(5)
    results = put_small_batch(fs, writes, parents=True)
    refused = [r.code for r in results if isinstance(r, Exception)]
    assert refused == ["quota-exceeded"] * 2
    assert Quota(fs.records, "u").report()["files"]["used"] == 3
