"""The paged tree walk: a fixed order, and a cursor that resumes exactly after what was processed."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from hycloud_core.fs import Namespace
from hycloud_core.fs.tree_walk import POST, PRE, count, walk

FILES = ["a/x", "a/b/y", "a/b/z", "a-b/w", "c", "d/e/f/g", "d/e/h"]


@pytest.fixture
def ns(tmp_path) -> Namespace:
    ns = Namespace(str(tmp_path), "u")
    for rel in FILES:
        ns.write(f"/t/{rel}", rel.encode(), parents=True)
    ns.mkdir("/t/empty")
    ns.write("/t/.hc-tmp-x", b"temporary")  # never walked
    return ns


def _rels(steps) -> list[str]:
    return [s.rel for s in steps]


def test_pre_order_puts_a_folder_before_its_contents(ns):
    assert _rels(walk(ns, "/t", PRE)) == [
        "", "a", "a/b", "a/b/y", "a/b/z", "a/x", "a-b", "a-b/w", "c",
        "d", "d/e", "d/e/f", "d/e/f/g", "d/e/h", "empty",
    ]  # fmt: skip


def test_post_order_puts_a_folder_after_its_contents(ns):
    steps = list(walk(ns, "/t", POST))
    assert _rels(steps)[-1] == ""
    seen: set[str] = set()
    for step in steps:
        if step.is_dir:
            inside = {r for r in _rels(steps) if r.startswith(step.rel + "/") or (step.rel == "" and r)}
            assert inside <= seen, step.rel
        seen.add(step.rel)
    assert sorted(_rels(steps)) == sorted(_rels(walk(ns, "/t", PRE)))


@pytest.mark.parametrize("order", [PRE, POST])
def test_resuming_from_any_cursor_yields_exactly_the_rest(ns, order):
    full = _rels(walk(ns, "/t", order))
    for i, cursor in enumerate(full):
        assert _rels(walk(ns, "/t", order, after=cursor)) == full[i + 1 :], cursor


def test_removal_resumes_after_the_entries_it_deleted(ns):
    """Post order, deleting as it goes, stopping every 3 entries: each entry once, the tree gone."""
    everything = _rels(walk(ns, "/t", PRE))
    cursor, removed = None, []
    while page := [s for _, s in zip(range(3), walk(ns, "/t", POST, after=cursor), strict=False)]:
        for step in page:
            host = ns.host(f"/t/{step.rel}" if step.rel else "/t")
            shutil.rmtree(host) if step.is_dir else os.unlink(host)
            removed.append(step.rel)
        cursor = page[-1].rel
    assert not os.path.exists(ns.host("/t"))
    assert sorted(removed) == sorted(everything)


def test_a_cursor_whose_entry_is_gone_resumes_after_its_place(ns):
    expected = _rels(walk(ns, "/t", PRE, after="a/b/y"))
    os.unlink(ns.host("/t/a/b/y"))
    assert _rels(walk(ns, "/t", PRE, after="a/b/y")) == expected
    shutil.rmtree(ns.host("/t/a"))
    assert _rels(walk(ns, "/t", PRE, after="a/b/y")) == expected[expected.index("a-b") :]


def test_a_file_is_a_tree_of_one(ns):
    assert _rels(walk(ns, "/t/c", PRE)) == [""]
    assert _rels(walk(ns, "/t/c", POST, after="")) == []


def test_count_in_pages_adds_up(ns):
    files = entries = 0
    cursor = None
    while True:
        f, e, cursor = count(ns, "/t", cursor, time.monotonic() + 60, limit=4)
        files, entries = files + f, entries + e
        if cursor is None:
            break
    assert (files, entries) == (len(FILES), 15)
    assert count(ns, "/t", None, time.monotonic() + 60) == (len(FILES), 15, None)
