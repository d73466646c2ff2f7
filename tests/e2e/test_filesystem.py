"""The hybrid filesystem end to end: every operation through the REST API and the real client."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
import requests

from hycloud_core import content

pytestmark = pytest.mark.e2e
MiB = 1024 * 1024


def sha(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def in_s3(deployment, content_hash: str) -> bool:
    listing = deployment.client("s3").list_objects_v2(
        Bucket=deployment.outputs["BucketName"], Prefix=content.object_key(content_hash)
    )
    return listing.get("KeyCount", 0) == 1


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("big") / "fifty.bin"
    path.write_bytes(os.urandom(50 * MiB))
    return path


@pytest.mark.exclusive
def test_50mib_upload_copy_move_download_delete_twice(deployment, alice, big_file, tmp_path):
    result = json.loads(alice.cli("--json", "put", "-p", str(big_file), "/large/fifty.bin").stdout)
    h = result["content_hash"]
    assert result["storage"] == "large" and result["size"] == 50 * MiB
    assert (
        h == content.hash_file(big_file)[0]
        and in_s3(deployment, h)
        and deployment.object_record(h)["state"] == "live"
    )
    link = deployment.efs_root() / "ns" / alice.id / "large" / "fifty.bin"
    assert link.stat().st_size < 2048 and json.loads(link.read_bytes())["content_hash"] == h

    alice.cli("cp", "/large/fifty.bin", "/large/copy.bin")
    assert json.loads((alice.ns_dir() / "large" / "copy.bin").read_bytes())["content_hash"] == h
    alice.cli("mkdir", "/moved")
    alice.cli("mv", "/large/copy.bin", "/moved/copy.bin")
    listing = json.loads(alice.cli("--json", "ls", "/moved").stdout)
    assert [(e["name"], e["size"]) for e in listing] == [("copy.bin", 50 * MiB)]

    alice.cli("get", "/moved/copy.bin", str(tmp_path / "back.bin"))
    assert sha(tmp_path / "back.bin") == sha(big_file)

    alice.cli("rm", "/large/fifty.bin")
    deployment.upkeep(grace_s=0)
    assert in_s3(deployment, h) and deployment.object_record(h)["state"] == "live"  # still linked
    alice.cli("rm", "/moved/copy.bin")
    assert in_s3(deployment, h)  # a delete leaves reclamation to the collector
    assert [v["content_hash"] for v in alice.sdk().versions("/moved/copy.bin")["versions"]] == [h]
    # kept while a version or a trash item names it: reclaimed once both go (here at once, as an
    # operator can)
    assert (
        h
        in deployment.upkeep(grace_s=0, version_retention_s=0, trash_retention_s=0)["collected"]["reclaimed"]
    )
    assert not in_s3(deployment, h) and deployment.object_record(h) is None


def test_interrupted_large_upload_resumes(alice, tmp_path, monkeypatch):
    """The network dies after two parts; rerunning the same command sends only the rest."""
    from hycloud.sdk import HyCloud
    from hycloud.transfer import TransferConfig, upload

    data = os.urandom(30 * MiB + 123)
    src = tmp_path / "resume.bin"
    src.write_bytes(data)
    real_put, calls = upload._put_part, []

    def network_dies_at_part_three(*args):
        calls.append(1)
        if len(calls) == 3:
            raise ConnectionError("link down")
        return real_put(*args)

    monkeypatch.setattr(upload, "_put_part", network_dies_at_part_three)
    one_at_a_time = HyCloud(alice.deployment.api_url, alice.key, transfer=TransferConfig(workers=1))
    with pytest.raises(ConnectionError):
        one_at_a_time.put(src, "/resume.bin")
    assert "resume.bin" not in [e["name"] for e in alice.sdk().ls("/")]

    result = json.loads(alice.cli("--json", "put", str(src), "/resume.bin").stdout)
    assert 0 < result["sent_bytes"] <= len(data) - 2 * content.PART_SIZE, result
    alice.cli("get", "/resume.bin", str(tmp_path / "resumed.out"))
    assert (tmp_path / "resumed.out").read_bytes() == data


def test_same_content_from_two_users_is_stored_once(deployment, alice, bob, tmp_path):
    data = os.urandom(5 * MiB + 7)
    src = tmp_path / "shared.bin"
    src.write_bytes(data)
    first = json.loads(alice.cli("--json", "put", str(src), "/alice-copy.bin").stdout)
    second = json.loads(bob.cli("--json", "put", str(src), "/bob-copy.bin").stdout)
    assert first["dedup"] is False and second["dedup"] is True and second["sent_bytes"] == 0
    assert int(deployment.object_record(first["content_hash"])["gen"]) == 2  # stored, then claimed
    assert "alice-copy.bin" not in bob.cli("ls", "/").stdout
    assert "bob-copy.bin" not in alice.cli("ls", "/").stdout
    bob.cli("get", "/bob-copy.bin", str(tmp_path / "bob.out"))
    assert (tmp_path / "bob.out").read_bytes() == data


def test_directory_operations(alice, tmp_path):
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    for i in range(25):
        (tree / f"f{i:02}.txt").write_text(f"file {i}\n")
    (tree / "sub" / "deep.txt").write_text("deep\n")
    alice.cli("put", "-r", str(tree), "/tree")
    assert len(alice.sdk().ls("/tree", page_size=10)) == 26
    pages = alice.sdk().http.json("GET", "/v1/dirs", params={"path": "/tree", "limit": 10})
    assert len(pages["entries"]) == 10 and pages["cursor"] == "f09.txt"

    refused = alice.cli("rmdir", "/tree", check=False)
    assert refused.returncode == 6 and "not-empty" in refused.stderr
    alice.cli("cp", "/tree", "/tree2")
    alice.cli("mv", "/tree2", "/tree3")
    stat = json.loads(alice.cli("--json", "stat", "/tree3/sub/deep.txt").stdout)
    assert stat["type"] == "file" and stat["size"] == 5
    alice.cli("get", "-r", "/tree3", str(tmp_path / "back"))
    assert (tmp_path / "back" / "sub" / "deep.txt").read_text() == "deep\n"
    assert sorted(p.name for p in (tmp_path / "back").iterdir()) == sorted(p.name for p in tree.iterdir())
    alice.cli("rm", "-r", "/tree3")
    assert alice.cli("stat", "/tree3", check=False).returncode == 5

    alice.sdk().put_bytes("/tree/f00.txt", b"overwritten")
    assert alice.sdk().get_bytes("/tree/f00.txt") == b"overwritten"


def _api(user, method: str, route: str, **kw) -> requests.Response:
    headers = {"Authorization": f"Bearer {user.key}", **kw.pop("headers", {})}
    return requests.request(method, user.deployment.api_url + route, headers=headers, timeout=60, **kw)


def test_hostile_inputs_are_refused_and_nothing_changes(deployment, alice, bob):
    alice.sdk().put_bytes("/keep.txt", b"keep me")
    before = sorted(p.name for p in (deployment.efs_root() / "ns" / alice.id).iterdir())
    for path in ("/../x", "/a/../../etc/passwd", "%2e%2e/x", "/a\\b", "/" + "x" * 300):
        r = _api(
            alice,
            "PUT",
            "/v1/files",
            params={"path": path},
            data=b"x",
            headers={"Content-Type": "application/octet-stream"},
        )
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid-path", (path, r.text)
    r = _api(
        alice,
        "PUT",
        "/v1/files",
        params={"path": "/keep.txt"},
        data=b"trunc",
        headers={
            "Content-Type": "application/octet-stream",
            "x-hycloud-sha256": hashlib.sha256(b"truncated upload").hexdigest(),
        },
    )
    assert r.status_code == 400 and r.json()["error"]["code"] == "hash-mismatch"
    r = _api(
        alice,
        "PUT",
        "/v1/files",
        params={"path": "/big"},
        data=b"x" * (3 * MiB),
        headers={"Content-Type": "application/octet-stream"},
    )
    assert r.status_code == 413 and r.json()["error"]["code"] == "too-large-for-small-file"
    r = _api(alice, "POST", "/v1/dirs", data="{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad-body"
    assert alice.sdk().get_bytes("/keep.txt") == b"keep me"
    assert sorted(p.name for p in (deployment.efs_root() / "ns" / alice.id).iterdir()) == before


def test_commit_whose_data_does_not_match_its_hash_is_refused(deployment, alice):
    declared = os.urandom(3 * MiB)
    h = content.hash_bytes(declared)
    digest = hashlib.sha256(declared).digest()
    start = _api(
        alice,
        "POST",
        "/v1/uploads",
        json={"size": len(declared), "content_hash": h, "part_digests": [content.b64(digest)]},
    ).json()
    other = os.urandom(3 * MiB)
    put = requests.put(
        start["urls"]["1"], data=other, headers={"x-amz-checksum-sha256": content.b64(digest)}, timeout=60
    )
    assert put.status_code >= 400  # S3 checks the part against the declared checksum
    r = _api(alice, "POST", "/v1/uploads/commit", json={"path": "/forged.bin", "content_hash": h})
    assert r.status_code == 409 and r.json()["error"]["code"] == "upload-incomplete"
    assert deployment.object_record(h) is None and not in_s3(deployment, h)
    assert _api(alice, "GET", "/v1/stat", params={"path": "/forged.bin"}).status_code == 404


def test_another_users_object_hash_gives_nothing(deployment, alice, bob, tmp_path):
    data = os.urandom(3 * MiB + 1)
    src = tmp_path / "alice-secret.bin"
    src.write_bytes(data)
    h = json.loads(alice.cli("--json", "put", str(src), "/secret.bin").stdout)["content_hash"]
    digests = [content.b64(d) for d in content.hash_file(src)[1]]
    start = _api(
        bob, "POST", "/v1/uploads", json={"size": len(data), "content_hash": h, "part_digests": digests}
    ).json()
    assert start["dedup"] is True
    r = _api(
        bob, "POST", "/v1/uploads/commit", json={"path": "/stolen.bin", "content_hash": h, "proof": "0" * 64}
    )
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad-proof"
    assert _api(bob, "GET", "/v1/stat", params={"path": "/stolen.bin"}).status_code == 404
    assert int(deployment.object_record(h)["gen"]) == 1  # nobody else linked it
