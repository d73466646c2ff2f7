"""The one-round exchange answered from the records in DynamoDB (moto): the same answer as from
the namespace's own tree, stale folder hashes recomputed, equal folders never read."""

from __future__ import annotations

import hashlib

import pytest

from hycloud_core.fs.merkle_scan import namespace_tree
from hycloud_core.merkle import FileEntry, build_tree, sketch, wire
from hycloud_core.store import sketch_reads
from hycloud_core.store.sketch_reads import SketchReads


@pytest.fixture
def fs(moto_filesystems):
    return moto_filesystems.fs("u1")


def put(fs, path: str, data: bytes) -> None:
    fs.put_small(path, data, hashlib.sha256(data).hexdigest(), parents=True)


def _hashes(reply: bytes, request: bytes) -> dict:
    """What an answer says but the mtimes (the records keep the writes', EFS its own)."""
    records = wire.decode_request(request).records
    return {
        i: (a.status, a.hash, a.unmatched, [(e.name, e.kind, e.hash) for e in a.entries])
        for i, a in wire.decode_reply(reply, records).items()
    }


def test_records_answer_as_the_tree_does_reading_only_changed_folders(fs):
    for d in range(4):
        for f in range(3):
            put(fs, f"/p/d{d}/f{f}", f"{d}{f}".encode())
    local = namespace_tree(fs.ns)  # the client's copy, before the cloud changes
    put(fs, "/p/d2/f1", b"edited in the cloud")  # leaves /p/d2, /p and / without hashes
    put(fs, "/p/d3/new", b"added")
    request = sketch.SketchExchange(local, "/p").request()
    reads = SketchReads.within(fs.merkle)
    got = sketch.answer(request, reads)
    assert _hashes(got, request) == _hashes(
        sketch.answer(request, sketch.NodeReader(namespace_tree(fs.ns))), request
    )
    exchange = sketch.SketchExchange(local, "/p")
    exchange.receive(got)
    assert exchange.done and exchange.result().paths() == {"/p/d2/f1", "/p/d3/new"}
    # /p itself (its stale hash recomputed, and with it the listings of /p, /p/d2 and /p/d3),
    # its children from its listing, then the listings of /p/d2 and /p/d3 in one batch
    assert (reads.queries, reads.requests, reads.rounds) == (4, 3, 3)
    unchanged = sketch.SketchExchange(namespace_tree(fs.ns), "/p")
    again = SketchReads.within(fs.merkle)
    unchanged.receive(sketch.answer(unchanged.request(), again))
    assert len(unchanged.result()) == 0 and (again.queries, again.rounds) == (1, 1)


def test_a_folder_the_cloud_lacks_is_one_difference_in_one_read(fs):
    put(fs, "/elsewhere/x", b"x")
    local = build_tree({"/gone/a/b": FileEntry.of(b"b", 1.0), "/gone/c": FileEntry.of(b"c", 1.0)})
    exchange, reads = sketch.SketchExchange(local, "/gone"), SketchReads.within(fs.merkle)
    exchange.receive(sketch.answer(exchange.request(), reads))
    [only] = exchange.result()
    assert (only.path, only.local.kind, only.remote, reads.queries) == ("/gone", "dir", None, 1)


def test_a_level_of_differing_folders_is_read_in_one_batch_from_their_listings(fs, monkeypatch):
    monkeypatch.setattr(sketch_reads, "BATCH_GET", 4)  # 100 in the cloud
    for d in range(6):
        put(fs, f"/w/d{d:03}/f", f"{d}".encode())
    local = namespace_tree(fs.ns)  # the client's copy, before the cloud changes
    for d in range(6):
        put(fs, f"/w/d{d:03}/f", f"edited {d}".encode())
    request = sketch.SketchExchange(local, "/w").request()
    sketch.answer(request, SketchReads.within(fs.merkle))  # recomputes the hashes and their listings
    reads = SketchReads.within(fs.merkle)
    got = sketch.answer(request, reads)
    assert _hashes(got, request) == _hashes(
        sketch.answer(request, sketch.NodeReader(namespace_tree(fs.ns))), request
    )
    # /w by GetItem, its children from its listing, then the 6 folders' listings in two batches
    # side by side: no Query
    assert (reads.queries, reads.requests, reads.rounds) == (8, 4, 3)


def test_a_listing_written_for_another_hash_is_not_used_and_is_written_again(fs):
    put(fs, "/v/a/x", b"x")
    put(fs, "/v/a/y", b"y")
    local = namespace_tree(fs.ns)
    put(fs, "/v/a/x", b"x2")
    request = sketch.SketchExchange(local, "/v").request()
    sketch.answer(request, SketchReads.within(fs.merkle))
    other = wire.encode_listing(bytes(16), [(wire.Entry("x", "file", bytes(16), 0.0), "")])
    fs.merkle.put_listings([{"id": fs.merkle.get("/v/a")["id"], "listing": other}])
    reads = SketchReads.within(fs.merkle)
    got = sketch.answer(request, reads)
    assert _hashes(got, request) == _hashes(
        sketch.answer(request, sketch.NodeReader(namespace_tree(fs.ns))), request
    )
    assert reads.requests == 4  # /v, its listing, /v/a's (of another hash), /v/a's children by Query
    again = SketchReads.within(fs.merkle)  # that Query left /v/a the listing of its hash
    assert _hashes(sketch.answer(request, again), request) == _hashes(got, request)
    assert again.requests == 3


def test_the_subtrees_of_folders_only_the_cloud_has_come_from_the_records(fs):
    put(fs, "/r/keep/a", b"a")
    local = namespace_tree(fs.ns)
    for name in ("x/1", "x/y/2", "x/y/z/3", "new/4"):
        put(fs, f"/r/{name}", name.encode())
    request = sketch.SketchExchange(local, "/r").request()
    got = sketch.answer(request, SketchReads.within(fs.merkle), subtrees=100)
    want = sketch.answer(request, sketch.NodeReader(namespace_tree(fs.ns)), subtrees=100)
    records = wire.decode_request(request).records
    trees = {
        t.path: sorted((e.name, e.kind, e.hash) for e in t.entries)
        for t in wire.decode_reply_below(got, records)[1]
    }
    assert trees == {
        t.path: sorted((e.name, e.kind, e.hash) for e in t.entries)
        for t in wire.decode_reply_below(want, records)[1]
    }
    assert sorted(n for n, _, _ in trees["x"]) == ["1", "y", "y/2", "y/z", "y/z/3"] and len(trees["new"]) == 1
