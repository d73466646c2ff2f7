"""Merkle hashes in the running system (issue 12): the exchange route against a client's own tree.

A client builds its tree from a local folder with `merkle.tree_from_directory`, mounted at the
remote folder it mirrors; the cloud's hashes must be identical, so an exchange over the real
API finds nothing to do on equal trees and exactly the changed paths otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hycloud_core.merkle import LevelExchange, Node, tree_from_directory
from tests.e2e.conftest import _make_user

pytestmark = [pytest.mark.e2e]
LARGE = 2 * 1024 * 1024 + 1000  # above the small-file threshold: stored in S3 behind a link file


@pytest.fixture(scope="module")
def owner(deployment):
    return _make_user(deployment, "merkle")


def _write_tree(root: Path) -> None:
    files = {
        "a.txt": b"alpha\n",
        "docs/b.md": b"# bee\n" * 40,
        "docs/deep/c.bin": bytes(range(256)) * 3,
        "docs/deep/d.txt": b"",
        "big.bin": os.urandom(LARGE),
    }
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (root / "empty").mkdir()


def exchange(sdk, local: Node, scope: str = "/"):
    """Run the level-by-level exchange against the route; the differences and the rounds taken."""
    ex = LevelExchange(local, scope)
    while not ex.done:
        ex.receive(sdk.merkle_children(ex.request()))
    return ex.result()


@pytest.fixture(scope="module")
def mirrored(owner, tmp_path_factory) -> Path:
    """A local folder uploaded as the owner's /proj (the owner holds nothing else)."""
    local = tmp_path_factory.mktemp("merkle") / "proj"
    local.mkdir()
    _write_tree(local)
    owner.sdk().upload_tree(local, "/proj")
    return local


def test_the_cloud_root_is_the_local_trees_root(owner, mirrored):
    sdk = owner.sdk()
    local = tree_from_directory(mirrored, prefix="/proj")
    assert sdk.merkle_root() == local.hash.hex()
    (root,) = sdk.merkle_children([""])[""]
    assert root["path"] == "/" and root["kind"] == "dir" and root["hash"] == local.hash.hex()
    listed = {s["path"]: s for s in sdk.merkle_children(["/proj/docs"])["/proj/docs"]}
    assert set(listed) == {"/proj/docs/b.md", "/proj/docs/deep"}
    assert listed["/proj/docs/b.md"]["hash"] == local.find("/proj/docs/b.md").hash.hex()


def test_an_exchange_of_equal_trees_finds_nothing(owner, mirrored):
    local = tree_from_directory(mirrored, prefix="/proj")
    whole = exchange(owner.sdk(), local)
    assert len(whole) == 0 and whole.rounds == 1
    scoped = exchange(owner.sdk(), local, scope="/proj")
    assert len(scoped) == 0 and scoped.rounds == 1


def test_an_exchange_finds_exactly_the_edited_file(owner, mirrored, tmp_path):
    sdk = owner.sdk()
    edited = mirrored / "docs" / "deep" / "c.bin"
    edited.write_bytes(b"changed locally\n")
    local = tree_from_directory(mirrored, prefix="/proj")
    diff = exchange(sdk, local, scope="/proj")
    assert [(d.path, d.kind) for d in diff] == [("/proj/docs/deep/c.bin", "file")]
    assert diff.rounds <= local.find("/proj").height()
    sdk.put(edited, "/proj/docs/deep/c.bin")
    assert len(exchange(sdk, local, scope="/proj")) == 0
    assert sdk.merkle_root() == local.hash.hex()


@pytest.mark.parametrize(
    "body",
    [
        {"paths": "/"},
        {"paths": [1]},
        {"paths": []},
        {"paths": ["/a/../b"]},
        {"paths": ["a"]},
        {"paths": ["/a/"]},
        {"paths": ["/a\x00b"]},
        {"paths": ["/"] * 1001},
        {"path": ["/"]},
        ["/"],
    ],
)
def test_bad_requests_are_refused(owner, body):
    r = owner.api().call("POST", "/v1/merkle/children", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"]
