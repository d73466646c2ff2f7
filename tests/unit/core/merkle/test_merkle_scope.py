"""A local folder mirrored at a remote path: same hashes as the cloud's, exchange scoped to it."""

from __future__ import annotations

from hycloud_core import content
from hycloud_core.merkle import FileEntry, LevelExchange, Responder, build_tree, tree_from_directory
from hycloud_core.merkle.hashing import file_hash


def _run(exchange: LevelExchange, responder: Responder):
    while not exchange.done:
        exchange.receive(responder.answer(exchange.request()))
    return exchange.result()


def test_a_local_file_hashes_with_the_clouds_content_hash(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"x" * 100)
    tree = tree_from_directory(tmp_path, prefix="/remote/dir")
    digest = bytes.fromhex(content.hash_file(tmp_path / "a.bin")[0])
    assert tree.find("/remote/dir/a.bin").hash == file_hash(digest)
    assert FileEntry.of(b"x" * 100, 0).content_hash == digest


def test_a_scoped_exchange_compares_only_that_folder(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f").write_bytes(b"same")
    local = tree_from_directory(tmp_path, prefix="/p")
    remote = build_tree(
        {
            "/p/sub/f": FileEntry.of(b"same", 1.0),
            "/elsewhere/g": FileEntry.of(b"not in the scope", 1.0),
        }
    )
    scoped = _run(LevelExchange(local, scope="/p"), Responder(remote))
    assert len(scoped) == 0 and scoped.rounds == 1
    assert _run(LevelExchange(local), Responder(remote)).paths() == {"/elsewhere"}
    (tmp_path / "sub" / "f").write_bytes(b"edited")
    edited = _run(LevelExchange(tree_from_directory(tmp_path, prefix="/p"), scope="/p"), Responder(remote))
    assert edited.paths() == {"/p/sub/f"} and edited.rounds == 2  # /p's children came in round 1


def test_the_scope_s_children_come_with_round_one_unless_it_holds_many(tmp_path):
    remote = build_tree({f"/p/f{i}": FileEntry.of(b"cloud", 1.0) for i in range(3)})
    for n, asked in ((3, ["/", "/p"]), (300, ["/"])):
        folder = tmp_path / str(n)
        folder.mkdir()
        for i in range(n):
            (folder / f"f{i}").write_bytes(b"local")
        exchange = LevelExchange(tree_from_directory(folder, prefix="/p"), scope="/p")
        assert exchange.request() == asked
        diff = _run(exchange, Responder(remote))
        assert diff.paths() == {f"/p/f{i}" for i in range(n)} and diff.rounds == (1 if n == 3 else 2)
