"""A coded file over what one request may decode (whoami's coded_whole_limit) is still a delta
base both ways when the relay cache does not hold it: the job's fetch rebuilds it from its blocks.

`hycloud get` and `hycloud put` through the fault proxy, which counts the bytes on the link, with
`--via delta`: what is tested is that the cloud can use the base, not eq. 2's choice, which rightly
picks a direct transfer on a fast local link once a slow (loaded) job has taught it the overhead.
"""

from __future__ import annotations

import shutil

import pytest

from hycloud_core import paths
from hycloud_core.jobs import base_cache_name
from tests.e2e.fault_proxy import FaultProxy
from tests.e2e.test_large_delta import MiB, hycloud, link_bytes, scatter_edits, sha256, write_file

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("large-files")]


def _forget_cached(alice, remote: str, *versions: str) -> None:
    """The relay cache evicts the path's copies and these versions (as under pressure)."""
    cache = alice.deployment.efs_root() / "cache"
    for name in (paths.cache_name(alice.ns_key, remote), *map(base_cache_name, versions)):
        (cache / name).unlink(missing_ok=True)


def test_an_uncached_coded_base_over_the_inline_limit_is_a_delta_base_both_ways(alice, tmp_path, monkeypatch):
    info = alice.sdk().info()
    if info.get("coded_threshold") is None:
        pytest.skip("erasure coding needs three instances (hycloud:regions)")
    size = info["coded_whole_limit"] + 64 * MiB  # the deployment's own limit, passed in 64 MiB steps
    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "sdk-state.sqlite3"))
    remote, state = f"/coded-{tmp_path.name}/big.bin", tmp_path / "state.sqlite3"
    mine, theirs = tmp_path / "mine.bin", tmp_path / "theirs.bin"
    write_file(mine, 7, size)
    first = hycloud(alice, None, state, "put", "--parents", "--coded", str(mine), remote)
    assert first["coded"] == {"n": 3, "k": 2}, first
    try:
        shutil.copyfile(mine, theirs)
        scatter_edits(theirs, 8)  # another device's version, coded too
        second = alice.sdk().put(theirs, remote, coded=True)
        _forget_cached(alice, remote, first["content_hash"], second["content_hash"])

        with FaultProxy() as proxy:  # base: my version, coded and in no cache
            got = hycloud(alice, proxy, state, "get", "--via", "delta", str(remote), str(mine))
            assert got["mode"] == "delta" and got["kind"] == "version", got
            assert link_bytes(proxy) < 0.10 * size, link_bytes(proxy)
        assert sha256(mine) == sha256(theirs)
        theirs.unlink()  # the disk holds two copies at most

        _forget_cached(alice, remote, first["content_hash"], second["content_hash"])
        scatter_edits(mine, 9)
        with FaultProxy() as proxy:  # base: their version, coded and in no cache
            put = hycloud(alice, proxy, state, "put", "--via", "delta", str(mine), remote)
            assert put["mode"] == "delta", put
            assert link_bytes(proxy) < 0.10 * size, link_bytes(proxy)
        alice.sdk().get(remote, tmp_path / "back.bin", via="direct")
        assert sha256(tmp_path / "back.bin") == sha256(mine)
    finally:  # later repair and migration jobs walk every coded file
        alice.sdk().rm(remote)
