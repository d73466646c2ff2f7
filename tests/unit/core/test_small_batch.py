"""A bundle's files committed together (moto): each file keeps its own outcome and guarantees."""

from __future__ import annotations

import hashlib
import time

import pytest

from hycloud_core.errors import ConflictError, HyCloudError
from hycloud_core.fs import small_batch
from hycloud_core.fs.small_batch import SmallWrite, put_small_batch
from hycloud_core.merkle.exchange import VIRTUAL_ROOT
from hycloud_core.store import locks
from hycloud_core.store.locks import leased_paths
from hycloud_core.store.merkle_records import MerkleRecords
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


@pytest.mark.slow
def test_a_busy_path_fails_alone_and_the_rest_commit(moto_filesystems, monkeypatch):
    fs = moto_filesystems.fs("u")
    monkeypatch.setattr(small_batch, "WAIT_S", 0.2)
    # another operation's lease, held past the test's end however slow a loaded machine runs it
    fs.records.table.put_item(
        Item={"pk": "LOCK#u", "sk": "/b/d1/f100", "owner": "other", "expires": int(time.time()) + 3600}
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
    assert "hash" not in tree.get("/b")
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


def _write(path: str, data: bytes, expect: str | None = None) -> SmallWrite:
    return SmallWrite(path, data, hashlib.sha256(data).hexdigest(), expect=expect)


def test_a_write_commits_only_over_the_version_it_expects(moto_filesystems):
    from hycloud_core import content
    from hycloud_core.fs.operations import ABSENT

    fs = moto_filesystems.fs("u")
    put_small_batch(fs, [_write("/v/a", b"old"), _write("/v/b", b"old")], parents=True)
    results = put_small_batch(
        fs,
        [
            _write("/v/a", b"new", expect=content.hash_bytes(b"old")),  # what is there: commits
            _write("/v/b", b"new", expect=content.hash_bytes(b"other")),  # changed since: refused
            _write("/v/c", b"new", expect=ABSENT),  # nothing there: commits
            _write("/v/a2", b"new", expect=content.hash_bytes(b"old")),  # expects a file never there
        ],
        parents=True,
    )
    codes = [getattr(r, "code", "ok") for r in results]
    assert codes == ["ok", "version-mismatch", "ok", "version-mismatch"]
    assert [fs.ns.read(p) for p in ("/v/a", "/v/b", "/v/c")] == [b"new", b"old", b"new"]
    assert Quota(fs.records, "u").report()["files"]["used"] == 3


@pytest.mark.parametrize("order", [("f", "f/child"), ("f/child", "f")])
def test_nested_paths_in_one_bundle_commit_in_order_and_the_other_is_a_409(moto_filesystems, order):
    fs = moto_filesystems.fs("u")
    for n in range(5):  # written side by side, this raced (a 500 most of the time)
        first, second = (f"/y{n}/{p}" for p in order)
        results = put_small_batch(fs, [_write(first, b"1"), _write(second, b"2")], parents=True)
        assert not isinstance(results[0], HyCloudError) and fs.ns.stat(first).type == "file"
        assert isinstance(results[1], ConflictError) and results[1].status == 409
