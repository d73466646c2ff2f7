"""Coded layouts kept in the relay cache for jobs: saved once by name, read back, pruned when old."""

from __future__ import annotations

import os
import time

import pytest

from hycloud_core.errors import BadRequestError
from hycloud_core.fs.relay_cache import LAYOUT_TTL_S, RelayCache

LAYOUT = {"n": 3, "k": 2, "chunk_size": 4096, "chunks": [{"length": 4096}] * 3}


def test_a_layout_saved_by_name_reads_back_and_is_never_evicted_as_a_cached_file(tmp_path):
    cache = RelayCache(str(tmp_path))
    name = cache.save_layout("ab" * 32, LAYOUT)
    assert cache.layout(name) == LAYOUT
    assert cache.save_layout("ab" * 32, LAYOUT) == name  # the same content: the same name
    assert cache.entries() == [] and cache.evict(0) == []
    assert cache.layout(name) == LAYOUT


def test_a_layout_a_ring_change_rewrote_is_kept_under_a_new_name(tmp_path):
    """The file's content is the same, its blocks are elsewhere: a job must read the new layout."""
    cache = RelayCache(str(tmp_path))
    before = cache.save_layout("ab" * 32, {**LAYOUT, "chunks": [{"length": 4096, "at": "us-west-2"}]})
    after = cache.save_layout("ab" * 32, {**LAYOUT, "chunks": [{"length": 4096, "at": "eu-west-1"}]})
    assert before != after and cache.layout(after)["chunks"][0]["at"] == "eu-west-1"


def test_old_layouts_are_pruned_and_recent_ones_kept(tmp_path):
    cache = RelayCache(str(tmp_path))
    old, new = cache.save_layout("aa" * 32, LAYOUT), cache.save_layout("bb" * 32, LAYOUT)
    past = time.time() - LAYOUT_TTL_S - 60
    os.utime(tmp_path / ".layouts" / old, (past, past))
    assert cache.prune_layouts() == 1
    assert cache.layout(new) == LAYOUT
    with pytest.raises(FileNotFoundError):
        cache.layout(old)


@pytest.mark.parametrize("name", ["", "../x.json", ".hidden", "a/b"])
def test_a_hostile_layout_name_is_refused(tmp_path, name):
    with pytest.raises(BadRequestError):
        RelayCache(str(tmp_path)).layout(name)
