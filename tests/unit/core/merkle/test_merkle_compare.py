"""Level-by-level comparison reports exactly the differing elements, within h rounds."""

import json

from hypothesis import given, settings
from merkle_oracle import expected_differences
from merkle_strategies import tree_pairs

from hycloud_core.merkle import (
    DirEntry,
    FileEntry,
    LevelExchange,
    Responder,
    Tombstone,
    build_tree,
    compare,
)


def observed(diff) -> dict:
    def kind(s):
        return None if s is None else s.kind

    return {d.path: (kind(d.local), kind(d.remote), d.winner) for d in diff}


@settings(max_examples=300, deadline=None)
@given(pair=tree_pairs())
def test_reports_exactly_the_changed_set_within_h_rounds(pair):
    local, remote = pair
    a, b = build_tree(local), build_tree(remote)
    diff = compare(a, b)
    assert observed(diff) == expected_differences(local, remote)
    assert diff.rounds <= max(a.height(), b.height())
    assert (a.hash == b.hash) == (len(diff) == 0)


@settings(max_examples=60, deadline=None)
@given(pair=tree_pairs())
def test_swapping_sides_mirrors_the_result(pair):
    local, remote = pair
    forward = {d.path: d for d in compare(build_tree(local), build_tree(remote))}
    backward = {d.path: d for d in compare(build_tree(remote), build_tree(local))}
    assert forward.keys() == backward.keys()
    for path, d in forward.items():
        b = backward[path]
        assert (d.local, d.remote) == (b.remote, b.local)
        both_live = d.local and d.remote and d.local.live and d.remote.live
        if both_live and d.local.mtime == d.remote.mtime:
            assert d.winner == b.winner == "remote"  # a tie between two versions keeps the remote one
        else:
            assert d.winner != b.winner


@settings(max_examples=60, deadline=None)
@given(pair=tree_pairs())
def test_exchange_over_json_messages_matches_in_process(pair):
    local, remote = map(build_tree, pair)
    exchange, responder = LevelExchange(local), Responder(remote)
    while not exchange.done:
        request = json.loads(json.dumps(exchange.request()))
        exchange.receive(json.loads(json.dumps(responder.answer(request))))
    assert exchange.result() == compare(local, remote)


def test_identical_trees_take_one_round():
    listing = {"/a/b": FileEntry.of(b"1", 1.0), "/c": DirEntry(2.0)}
    diff = compare(build_tree(listing), build_tree(dict(listing)))
    assert len(diff) == 0 and diff.rounds == 1


def test_deep_change_takes_h_rounds_and_names_the_block():
    deep = "/a/b/c/d/file"
    local = build_tree({deep: FileEntry.of(b"v", 1.0, (b"1", b"2", b"3"))})
    remote = build_tree({deep: FileEntry.of(b"v", 1.0, (b"1", b"X", b"3"))})
    diff = compare(local, remote)
    assert [(d.path, d.kind, d.index) for d in diff] == [(deep, "file", None), (deep + "/#1", "block", 1)]
    assert diff.rounds == local.height() == 7


def test_tombstone_is_a_deletion_not_a_missing_file():
    remote = build_tree({"/docs/a.txt": FileEntry.of(b"old", 5.0), "/docs/b.txt": FileEntry.of(b"b", 1.0)})
    local = build_tree({"/docs/a.txt": Tombstone(10.0), "/docs/b.txt": FileEntry.of(b"b", 1.0)})
    (d,) = compare(local, remote)
    assert d.path == "/docs/a.txt" and d.local.kind == "tombstone" and d.kind == "file"
    assert d.winner == "local" and d.action == "delete_remote"
    # without the mark the same state reads as "not yet here": fetch it
    (missing,) = compare(build_tree({"/docs/b.txt": FileEntry.of(b"b", 1.0)}), remote)
    assert missing.local is None and missing.action == "pull"


def test_edit_after_delete_wins():
    local = build_tree({"/a.txt": Tombstone(10.0)})
    remote = build_tree({"/a.txt": FileEntry.of(b"new", 20.0)})
    (d,) = compare(local, remote)
    assert d.winner == "remote" and d.action == "pull"


def test_tombstone_against_absent_is_consistent():
    local = build_tree({"/x": Tombstone(3.0), "/y": FileEntry.of(b"y", 1.0)})
    remote = build_tree({"/y": FileEntry.of(b"y", 1.0)})
    diff = compare(local, remote)
    assert len(diff) == 0 and local.hash == remote.hash


def test_deleted_directory_against_older_and_newer_content():
    local = build_tree({"/proj": Tombstone(10.0)})
    older = build_tree({"/proj/a": FileEntry.of(b"a", 4.0), "/proj/sub/b": FileEntry.of(b"b", 6.0)})
    newer = build_tree({"/proj/a": FileEntry.of(b"a", 4.0), "/proj/sub/b": FileEntry.of(b"b", 12.0)})
    (d,) = compare(local, older)
    assert (d.path, d.kind, d.action) == ("/proj", "dir", "delete_remote")
    (d,) = compare(local, newer)
    assert (d.path, d.kind, d.action) == ("/proj", "dir", "pull")


def test_added_modified_deleted_and_new_directory():
    base = {
        "/keep": FileEntry.of(b"k", 1.0),
        "/mod": FileEntry.of(b"m1", 1.0),
        "/gone": FileEntry.of(b"g", 1.0),
        "/d/inner": FileEntry.of(b"i", 1.0),
    }
    changed = dict(base)
    changed["/mod"] = FileEntry.of(b"m2", 3.0)
    changed["/gone"] = Tombstone(4.0)
    changed["/new"] = FileEntry.of(b"n", 5.0)
    changed["/newdir/x/y"] = FileEntry.of(b"y", 6.0)
    changed["/empty"] = DirEntry(7.0)
    diff = compare(build_tree(changed), build_tree(base))
    assert {d.path: d.action for d in diff} == {
        "/mod": "push",
        "/gone": "delete_remote",
        "/new": "push",
        "/newdir": "push",
        "/empty": "push",
    }
