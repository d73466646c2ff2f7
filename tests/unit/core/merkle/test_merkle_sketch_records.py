"""The one-round exchange answered from the records in DynamoDB (moto): the same answer as from
the namespace's own tree, stale folder hashes recomputed, equal folders never read."""

from __future__ import annotations

import hashlib

import pytest

from hycloud_core.fs.merkle_scan import namespace_tree
from hycloud_core.merkle import FileEntry, build_tree, sketch, wire


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
    reads = fs.merkle.sketch_reads()
    got = sketch.answer(request, reads)
    assert _hashes(got, request) == _hashes(
        sketch.answer(request, sketch.NodeReader(namespace_tree(fs.ns))), request
    )
    exchange = sketch.SketchExchange(local, "/p")
    exchange.receive(got)
    assert exchange.done and exchange.result().paths() == {"/p/d2/f1", "/p/d3/new"}
    # /p itself, then the children of /p, then those of /p/d2 and /p/d3 side by side
    assert (reads.queries, reads.rounds) == (4, 3)
    unchanged = sketch.SketchExchange(namespace_tree(fs.ns), "/p")
    again = fs.merkle.sketch_reads()
    unchanged.receive(sketch.answer(unchanged.request(), again))
    assert len(unchanged.result()) == 0 and (again.queries, again.rounds) == (1, 1)


def test_a_folder_the_cloud_lacks_is_one_difference_in_one_read(fs):
    put(fs, "/elsewhere/x", b"x")
    local = build_tree({"/gone/a/b": FileEntry.of(b"b", 1.0), "/gone/c": FileEntry.of(b"c", 1.0)})
    exchange, reads = sketch.SketchExchange(local, "/gone"), fs.merkle.sketch_reads()
    exchange.receive(sketch.answer(exchange.request(), reads))
    [only] = exchange.result()
    assert (only.path, only.local.kind, only.remote, reads.queries) == ("/gone", "dir", None, 1)
