"""The one-round exchange (merkle/sketch.py, wire.py): messages round-trip, it finds what the
level-by-level exchange finds, reads only changed folders, and settles a prefix collision."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from merkle_strategies import tree_pairs

from hycloud_core.merkle import DirEntry, FileEntry, NodeSummary, build_tree, compare, sketch, wire
from hycloud_core.merkle.hashing import file_hash


def _run(local, remote, scope="/", below=None):
    reader = sketch.NodeReader(remote)
    sent: list[bytes] = []

    def send(body: bytes) -> bytes:
        sent.append(body)
        return sketch.answer(body, reader, below)

    return sketch.compare(local, scope, send), reader, sent


def _view(diff) -> dict:
    def side(s):
        return None if s is None or not s.live else (s.kind, s.hash if s.kind == "file" else b"")

    return {d.path: (side(d.local), side(d.remote)) for d in diff if "/#" not in d.path}


def test_messages_round_trip():
    records = (
        wire.Record("", bytes(range(16)), 3, (b"abc", b"\x00\x01\x02")),
        wire.Record("dé", b"\xff" * 16),
        wire.Record("dé/x", b"\x01" * 16, 2, (b"zz",) * 9),
    )
    request = wire.Request("/p/q", records)
    assert wire.decode_request(wire.encode_request(request)) == request
    answers = {
        0: wire.Answer(
            wire.DIFFERS,
            b"\x02" * 16,
            unmatched=frozenset({1}),
            entries=[wire.Entry("a", "file", b"\x03" * 16, 1.5), wire.Entry("ab", "dir", b"\x04" * 16, 2.25)],
        ),
        1: wire.Answer(wire.ABSENT),
        2: wire.Answer(wire.NOT_DIR, b"\x05" * 16, 7.0),
    }
    got = wire.decode_reply(wire.encode_reply(answers, records), records)
    assert got[0].entries == answers[0].entries and got[0].unmatched == {1} and got[0].hash == b"\x02" * 16
    assert got[1].status == wire.ABSENT and (got[2].hash, got[2].mtime) == (b"\x05" * 16, 7.0)
    assert wire.decode_reply(wire.encode_reply({2: answers[2]}, records), records).keys() == {2}
    below = [
        wire.Subtree(
            "dé/new",
            True,
            [wire.Entry("s", "dir", b"\x06" * 16, 1.0), wire.Entry("s/f", "file", b"\x07" * 16, 2.0)],
        ),
        wire.Subtree("other", False),
    ]
    data = wire.encode_reply(answers, records, below)
    assert data[0] == wire.BELOW and wire.decode_reply_below(data, records) == (got, below)
    assert wire.decode_reply_below(wire.encode_reply(answers, records), records)[1] == []


def test_a_listing_round_trips_for_its_hash_only():
    entries = [
        (
            wire.Entry(f"f{i:04}é", "file" if i % 7 else "dir", bytes([i % 256]) * 16, i / 3),
            "" if i % 7 else f"id{i}",
        )
        for i in range(300)
    ]
    data = wire.encode_listing(b"\x09" * 16, list(reversed(entries)))
    assert data is not None and wire.decode_listing(data, b"\x09" * 16) == entries  # in name order
    assert wire.decode_listing(data, b"\x08" * 16) is None  # the folder changed since
    assert wire.encode_listing(b"\x09" * 16, entries * 14) is None  # past MAX_LISTING: none kept
    for bad in (data[:-1], data + b"\x00", data[:40]):
        with pytest.raises(ValueError):
            wire.decode_listing(bad, b"\x09" * 16)


def test_prefixes_lengthen_with_the_folder():
    assert [wire.prefix_length(n) for n in (1, 100, 1000, 100_000)] == [2, 3, 4, 6]


@settings(max_examples=120, deadline=None)
@given(pair=tree_pairs())
def test_finds_what_the_level_exchange_finds(pair):
    local, remote = build_tree(pair[0]), build_tree(pair[1])
    exchange, _, _ = _run(local, remote)
    assert _view(exchange.result()) == _view(compare(local, remote))


def _tree(changed: set[int], n: int = 10) -> dict:
    """n folders of n files; the files in `changed` hold other content."""
    return {
        f"/p/d{i}/f{j}": FileEntry.of(b"new" if i * n + j in changed else b"old", 1.0)
        for i in range(n)
        for j in range(n)
    }


def test_only_changed_folders_are_read_and_one_round_suffices():
    local, remote = build_tree(_tree({23, 57})), build_tree(_tree(set()))
    exchange, reader, sent = _run(local, remote, "/p")
    diff = exchange.result()
    assert diff.paths() == {"/p/d2/f3", "/p/d5/f7"} and diff.rounds == 1 and len(sent) == 1
    assert sorted(reader.reads) == ["/p", "/p/*", "/p/d2/*", "/p/d5/*"]
    unchanged, reader, _ = _run(remote, remote, "/p")
    assert len(unchanged.result()) == 0 and reader.reads == ["/p"]


def test_added_removed_and_new_folders_on_either_side():
    ours = {**_tree(set(), 3), "/p/d0/mine": FileEntry.of(b"m", 5.0), "/p/only/here": FileEntry.of(b"h", 5.0)}
    theirs = {**_tree(set(), 3), "/p/theirs/x": FileEntry.of(b"t", 6.0), "/p/empty": DirEntry()}
    del theirs["/p/d1/f1"]
    exchange, _, _ = _run(build_tree(ours), build_tree(theirs), "/p")
    found = {d.path: (d.local and d.local.kind, d.remote and d.remote.kind) for d in exchange.result()}
    assert found == {
        "/p/d0/mine": ("file", None),
        "/p/d1/f1": ("file", None),
        "/p/only": ("dir", None),
        "/p/theirs": (None, "dir"),
        "/p/empty": (None, "dir"),
    }
    missing, _, _ = _run(build_tree(ours), build_tree({"/q/x": FileEntry.of(b"x", 1.0)}), "/p")
    assert [(d.path, d.remote) for d in missing.result()] == [("/p", None)]


def test_folders_only_the_cloud_has_come_whole_with_the_answer_within_the_limit():
    ours = _tree(set(), 3)
    theirs = {**ours, "/p/new/a/x": FileEntry.of(b"x", 3.0), "/p/new/y": FileEntry.of(b"y", 4.0)}
    theirs |= {"/p/d0/renamed/z": FileEntry.of(b"z", 5.0), "/p/empty": DirEntry()}
    exchange, _, sent = _run(build_tree(ours), build_tree(theirs), "/p", below=100)
    assert len(sent) == 1 and exchange.below == {
        "/p/new": [
            NodeSummary("/p/new/a", "dir", build_tree(theirs).find("/p/new/a").hash, 3.0),
            NodeSummary("/p/new/y", "file", file_hash(FileEntry.of(b"y", 4.0).content_hash), 4.0),
            NodeSummary("/p/new/a/x", "file", file_hash(FileEntry.of(b"x", 3.0).content_hash), 3.0),
        ],
        "/p/d0/renamed": [
            NodeSummary("/p/d0/renamed/z", "file", file_hash(FileEntry.of(b"z", 5.0).content_hash), 5.0)
        ],
        "/p/empty": [],
    }
    cut, _, _ = _run(build_tree(ours), build_tree(theirs), "/p", below=1)  # past the limit: listed later
    assert set(cut.below) == {"/p/d0/renamed", "/p/empty"}  # /p/new's second level was past it
    plain, _, _ = _run(build_tree(ours), build_tree(theirs), "/p")  # not asked for: none
    assert plain.below == {} and _view(plain.result()) == _view(exchange.result())


def test_a_prefix_collision_is_settled_by_asking_for_full_hashes(monkeypatch):
    """The edited file's new hash shares its prefix with the cloud's old one: the cloud sees nothing
    unmatched, the folder's hash does not check out, so it is asked for again without a sketch."""
    remote_tree = build_tree({"/p/a": FileEntry.of(b"old", 1.0), "/p/b": FileEntry.of(b"b", 1.0)})
    local_tree = build_tree({"/p/a": FileEntry.of(b"new", 2.0), "/p/b": FileEntry.of(b"b", 1.0)})
    edited = sketch.named("/p/a", local_tree.find("/p/a").hash)  # what the sketch holds a prefix of
    cloud_a = sketch.named("/p/a", remote_tree.find("/p/a").hash)
    assert edited[:2] != cloud_a[:2]
    real = sketch.SketchExchange._sketched

    def colliding(self, path, digest, files):
        record = real(self, path, digest, files)
        files = tuple(cloud_a[: record.prefix] if f == edited[: record.prefix] else f for f in record.files)
        return wire.Record(record.path, record.hash, record.prefix, files)  # as if they collided

    monkeypatch.setattr(sketch.SketchExchange, "_sketched", colliding)
    exchange, _, sent = _run(local_tree, remote_tree, "/p")
    diff = exchange.result()
    assert diff.paths() == {"/p/a"} and exchange.settled == ["/p"] and diff.rounds == 2 and len(sent) == 2
    [d] = diff
    assert d.remote.hash == file_hash(FileEntry.of(b"old", 1.0).content_hash)
    assert wire.decode_request(sent[1]).records[0].prefix == 0  # full listing, full hashes


def test_bytes_grow_with_changes_not_with_the_tree():
    n = 30
    local = build_tree(_tree({5}, n))
    _, _, sent = _run(local, build_tree(_tree(set(), n)), "/p")
    reply = sketch.answer(sent[0], sketch.NodeReader(build_tree(_tree(set(), n))))
    assert len(sent[0]) < n * n * wire.prefix_length(n) + n * 40  # prefixes and folder records
    assert len(reply) < 200  # one folder differs: its hash, bitmap and one entry
