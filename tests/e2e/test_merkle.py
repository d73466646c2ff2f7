"""Merkle hashes in the running system (issue 12): the exchange route against a client's own tree.

A client builds its tree from a local folder with `merkle.tree_from_directory`, mounted at the
remote folder it mirrors; the cloud's hashes must be identical, so an exchange over the real
API finds nothing to do on equal trees and exactly the changed paths otherwise.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from pathlib import Path

import pytest

from hycloud.sdk.tree_jobs import follow
from hycloud_core import bundle
from hycloud_core.merkle import LevelExchange, Node, Responder, sketch, tree_from_directory
from hycloud_core.merkle.exchange import MAX_PATHS
from tests.e2e.conftest import _make_user
from tests.e2e.invariants import merkle_tree_on_efs, records

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


def test_the_one_round_exchange_finds_the_edit_in_one_binary_request(owner, mirrored):
    """POST /v1/merkle/diff through API Gateway: a binary body and answer, one request."""
    sdk = owner.sdk()
    equal = sketch.compare(tree_from_directory(mirrored, prefix="/proj"), "/proj", sdk.merkle_diff)
    assert len(equal.result()) == 0 and equal.rounds == 1
    edited = mirrored / "a.txt"
    edited.write_bytes(b"omega\n")
    found = sketch.compare(tree_from_directory(mirrored, prefix="/proj"), "/proj", sdk.merkle_diff).result()
    assert [(d.path, d.local.hash != d.remote.hash) for d in found] == [("/proj/a.txt", True)]
    assert found.rounds == 1 and sdk.exchange_stats["requests"] == 2
    sdk.put(edited, "/proj/a.txt")
    r = owner.api().call(
        "POST", "/v1/merkle/diff", data=b"\x09junk", headers={"Content-Type": "application/octet-stream"}
    )
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad-body"


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
        {"paths": ["/"] * (MAX_PATHS + 1)},
        {"path": ["/"]},
        ["/"],
    ],
)
def test_bad_requests_are_refused(owner, body):
    r = owner.api().call("POST", "/v1/merkle/children", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"]


def _agree(user, *folders: str) -> Node:
    """The route's root and the children of `folders` are what a recompute from EFS says."""
    efs = merkle_tree_on_efs(user.ns_dir())
    sdk = user.sdk()
    assert sdk.merkle_root() == efs.hash.hex()
    asked = ["", *folders]
    expected = Responder(efs).answer(asked)
    for path, got in sdk.merkle_children(asked).items():
        live = [(s["path"], s["kind"], s["hash"]) for s in got if s["kind"] != "tombstone"]
        assert live == [(s["path"], s["kind"], s["hash"]) for s in expected[path]], path
    return efs


def _tombstones(sdk, folder: str) -> set[str]:
    return {s["path"] for s in sdk.merkle_children([folder])[folder] if s["kind"] == "tombstone"}


@pytest.fixture
def worker(deployment):
    """A user of its own: its root hash is the test's alone."""
    return _make_user(deployment, "merkle-ops")


def test_each_operation_changes_the_hashes_as_a_recompute_says(worker):
    sdk = worker.sdk()
    roots = [_agree(worker).hash]

    def step(*folders: str) -> None:
        roots.append(_agree(worker, *folders).hash)
        assert roots[-1] != roots[-2]

    sdk.mkdir("/w/empty", parents=True)
    step("/w")
    sdk.put_bytes("/w/a.txt", b"one")
    sdk.put_bytes("/w/sub/b.txt", b"two", parents=True)
    step("/w", "/w/sub")
    sdk.cp("/w/sub", "/w/copy")
    step("/w", "/w/copy")
    sdk.mv("/w/copy", "/moved")
    step("/", "/w", "/moved")
    assert "/w/copy" in _tombstones(sdk, "/w")
    sdk.rm("/w/a.txt")
    step("/w")
    assert "/w/a.txt" in _tombstones(sdk, "/w")
    sdk.rmdir("/w/empty")
    step("/w")
    sdk.rmdir("/moved", recursive=True)
    step("/")
    assert "/moved" in _tombstones(sdk, "/") and sdk.merkle_children(["/moved"]) == {"/moved": []}


def test_an_exchange_carries_deletions(owner, mirrored):
    """A file the cloud deleted after the client last saw it is a deletion to apply locally."""
    sdk = owner.sdk()
    sdk.put_bytes("/proj/gone.txt", b"soon gone")
    (mirrored / "gone.txt").write_bytes(b"soon gone")
    os.utime(mirrored / "gone.txt", (1, 1))  # last changed long before the deletion
    sdk.rm("/proj/gone.txt")
    (diff,) = exchange(sdk, tree_from_directory(mirrored, prefix="/proj"), scope="/proj")
    assert diff.path == "/proj/gone.txt" and diff.remote.kind == "tombstone" and diff.action == "delete_local"
    (mirrored / "gone.txt").unlink()
    assert len(exchange(sdk, tree_from_directory(mirrored, prefix="/proj"), scope="/proj")) == 0


@pytest.mark.slow
def test_tree_jobs_leave_the_hashes_right(worker):
    """Past the inline limit (200 entries) a copy runs as a job, page by page; a move and a remove
    are done at once whatever the tree holds (200: one rename, O(depth) Merkle writes). The 210
    files are written by one bundle (each still its own file and hash)."""
    api = worker.api()
    files = [(f"/t/d{j % 3}/f{j:03d}", hashlib.sha256(str(j).encode()).digest()) for j in range(210)]
    packed = bundle.pack((bundle.member_of(path, data), data) for path, data in files)
    r = api.call("POST", "/v1/bundles", data=packed, headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 200 and [f["status"] for f in r.json()["files"]] == ["ok"] * 210, r.text
    _agree(worker, "/t")
    sdk = worker.sdk()
    for method, route, kwargs, changed in (
        ("POST", "/v1/copy", {"json": {"src": "/t", "dst": "/c"}}, ["/", "/c", "/c/d1"]),
        ("POST", "/v1/move", {"json": {"src": "/c", "dst": "/m"}}, ["/", "/m", "/m/d2"]),
        ("DELETE", "/v1/dirs", {"params": {"path": "/m", "recursive": "true"}}, ["/"]),
    ):
        started = api.call(method, route, **kwargs)
        assert started.status_code == (202 if route == "/v1/copy" else 200), started.text
        if started.status_code == 202:
            follow(sdk.http, started.json())
        _agree(worker, *changed)
    assert {"/c", "/m"} <= _tombstones(sdk, "/")


@pytest.mark.exclusive
@pytest.mark.slow
def test_upkeep_repairs_a_lost_hash_write(deployment, worker):
    """A node lost between EFS and DynamoDB (a crash) is rewritten from EFS by upkeep."""
    sdk = worker.sdk()
    sdk.put_bytes("/r/kept.txt", b"kept", parents=True)
    sdk.put_bytes("/r/lost.txt", b"lost")
    ddb = deployment.client("dynamodb")
    entry = ddb.get_item(  # nodes are keyed by their folder's id (store/merkle_records.py)
        TableName=deployment.outputs["TableName"],
        Key={"pk": {"S": f"NS#{worker.ns_key}"}, "sk": {"S": "D#root/r"}},
    )
    folder = entry["Item"]["id"]["S"]
    ddb.delete_item(
        TableName=deployment.outputs["TableName"],
        Key={"pk": {"S": f"MK#{worker.ns_key}"}, "sk": {"S": f"{folder}/lost.txt"}},
    )
    ddb.update_item(  # and a folder's kept hash changed behind its back
        TableName=deployment.outputs["TableName"],
        Key={"pk": {"S": f"MK#{worker.ns_key}"}, "sk": {"S": "root/r"}},
        UpdateExpression="SET #h = :h",
        ExpressionAttributeNames={"#h": "hash"},
        ExpressionAttributeValues={":h": {"S": "00" * 16}},
    )
    assert sdk.merkle_root() != merkle_tree_on_efs(worker.ns_dir()).hash.hex()
    result = deployment.upkeep(grace_s=0, walk=False, reconcile={"users": [worker.ns_key]})
    assert "/r/lost.txt" in result["merkle_repaired"]
    _agree(worker, "/r")


@pytest.mark.exclusive
def test_a_tree_keyed_by_path_is_migrated_by_upkeep(deployment):
    """A tree as main kept it before folder ids (nodes keyed by path, hashes over paths, no layout
    item) is dropped and written again from EFS by upkeep; the root then equals EFS's, and the
    exchange and moves work on it."""
    user = _make_user(deployment, "mkmigrate")
    sdk = user.sdk()
    sdk.put_bytes("/m/a.txt", b"alpha", parents=True)
    sdk.put_bytes("/m/sub/b.txt", b"beta", parents=True)
    table, pk = records(deployment).table, f"MK#{user.ns_key}"
    kept = table.query(KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": pk})["Items"]
    with table.batch_writer() as batch:
        for item in kept:
            batch.delete_item(Key={"pk": pk, "sk": item["sk"]})
    with table.batch_writer() as batch:
        for sk, path, kind in (
            ("/", "/", "dir"),
            ("///m", "/m", "dir"),
            ("/m//a.txt", "/m/a.txt", "file"),
            ("/m//sub", "/m/sub", "dir"),
            ("/m/sub//b.txt", "/m/sub/b.txt", "file"),
        ):
            batch.put_item(
                Item={"pk": pk, "sk": sk, "path": path, "kind": kind, "hash": "ab" * 16, "mtime": 1}
            )
    assert sdk.merkle_root() != merkle_tree_on_efs(user.ns_dir()).hash.hex()
    result = deployment.upkeep(grace_s=0, walk=False, reconcile={"users": [user.ns_key]})
    assert result["merkle_rebuilt"] == 5  # /, /m, /m/sub and the two files
    left = table.query(KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": pk})["Items"]
    assert not [i["sk"] for i in left if i["sk"].startswith("/") and i["sk"] != "/"]
    assert {"pk": pk, "sk": "LAYOUT", "version": 3} in left
    assert sdk.merkle_root() == merkle_tree_on_efs(user.ns_dir()).hash.hex()
    sdk.mv("/m", "/n")
    assert sdk.merkle_root() == merkle_tree_on_efs(user.ns_dir()).hash.hex()


LONG = "x" * 120  # long names: the whole answer is larger than a DynamoDB item (400 KB)


def _wide_tree(user) -> list[str]:
    """/w/cK/dI/eJ/f.txt (10 x 10 x 9 folders) in one bundle: no folder of /w has a kept hash yet
    (each write invalidates those above it); the 1,000 folders below /w/cK, to ask about at once."""
    files = [
        (f"/w/c{k}/d{i}/e{j}-{LONG}/f-{LONG}.txt", f"{k}.{i}.{j}\n".encode())
        for k in range(10)
        for i in range(10)
        for j in range(9)
    ]
    packed = bundle.pack((bundle.member_of(path, data), data) for path, data in files)
    r = user.api().call(
        "POST", "/v1/bundles", data=packed, headers={"Content-Type": "application/octet-stream"}
    )
    assert r.status_code == 200 and all(f["status"] == "ok" for f in r.json()["files"]), r.text
    leaves = ["", *(f"/e{j}-{LONG}" for j in range(9))]
    return [f"/w/c{k}/d{i}{e}" for k in range(10) for i in range(10) for e in leaves]


@pytest.mark.exclusive
def test_a_round_of_1000_stale_folders_is_answered_in_time(deployment):
    """Once, 1,000 paths whose folders all needed their hashes recomputed took the route past the
    API's 29 s, and an answer larger than a DynamoDB item could not be kept for its Idempotency-Key:
    both answered 500. Every request now answers in time: 200 with what it had time for (the
    client asks again for the rest), or 503 with Retry-After; together, exactly the hashes a
    recompute from EFS gives."""
    user = _make_user(deployment, "merkle-wide")
    asked = _wide_tree(user)
    assert len(asked) == MAX_PATHS
    api, answers, requests = user.api(), {}, 0
    while len(answers) < len(asked) and requests < 20:
        pending = [p for p in asked if p not in answers]
        started = time.monotonic()
        r = api.call(
            "POST",
            "/v1/merkle/children",
            json={"paths": pending},
            headers={"Idempotency-Key": uuid.uuid4().hex},
        )
        requests += 1
        assert time.monotonic() - started < 20, "no time left before the API's 29 s"
        if r.status_code == 503:
            assert int(r.headers["Retry-After"]) >= 1
            continue
        assert r.status_code == 200, r.text
        assert r.json() and set(r.json()) <= set(pending)
        answers.update(r.json())
    expected = Responder(merkle_tree_on_efs(user.ns_dir())).answer(asked)
    for path in asked:
        assert [(s["path"], s["hash"]) for s in answers[path]] == [
            (s["path"], s["hash"]) for s in expected[path]
        ], path
    assert user.sdk().merkle_children(asked) == answers  # the SDK asks again for what is left
