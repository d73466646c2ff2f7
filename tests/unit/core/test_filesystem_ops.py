"""Filesystem operations over EFS (a temp dir), S3 and DynamoDB (moto): collection, dedup, move, copy."""

from __future__ import annotations

import hashlib
import os

import pytest

from hycloud_core import content
from hycloud_core.errors import BadRequestError, ConflictError, NotFoundError
from hycloud_core.fs import FileSystem
from tests.conftest import MOTO_BUCKET

BUCKET = MOTO_BUCKET


@pytest.fixture
def env(moto_filesystems, monkeypatch):
    monkeypatch.setattr(content, "PART_SIZE", 5 * 1024 * 1024)  # S3's minimum, keeps tests light
    m = moto_filesystems
    return m.fs, m.s3, m.objects, m


def upload(fs: FileSystem, s3, data: bytes, path: str) -> dict:
    """What the client does, with boto3 in place of presigned URLs."""
    digests = [
        hashlib.sha256(data[i : i + content.PART_SIZE]).digest()
        for i in range(0, max(len(data), 1), content.PART_SIZE)
    ]
    h = content.hash_from_parts(digests)
    state = fs.uploads.start(len(data), h, [content.b64(d) for d in digests])
    proof = None
    if state["dedup"]:
        proof = content.possession_proof(
            state["challenge"]["nonce"], [data[o : o + n] for o, n in state["challenge"]["ranges"]]
        )
    else:
        upload_id = fs.records.get_upload(fs.user, h)["upload_id"]
        for n in state["missing"]:
            off, length = content.part_range(len(data), n)
            s3.upload_part(
                Bucket=BUCKET,
                Key=content.object_key(h),
                UploadId=upload_id,
                PartNumber=n,
                Body=data[off : off + length],
                ChecksumSHA256=content.b64(digests[n - 1]),
            )
    fs.commit_large(path, h, proof)
    return {"hash": h, "dedup": state["dedup"]}


def stored(s3, h: str) -> bool:
    return s3.list_objects_v2(Bucket=BUCKET, Prefix=content.object_key(h)).get("KeyCount", 0) == 1


def test_large_file_content_lives_while_any_link_names_it(env):
    fs, s3, objects, m = env
    alice = fs("alice")
    data = os.urandom(12 * 1024 * 1024 + 5)
    h = upload(alice, s3, data, "/big.bin")["hash"]
    entry = alice.ns.stat("/big.bin")
    assert entry.storage == "large" and entry.size == len(data) and objects.get(h)["state"] == "live"
    assert s3.get_object(Bucket=BUCKET, Key=content.object_key(h))["Body"].read() == data
    alice.copy("/big.bin", "/copy.bin")
    alice.move("/copy.bin", "/moved.bin")
    alice.delete("/big.bin")
    assert m.collect().reclaimed == [] and stored(s3, h)
    alice.delete("/moved.bin")
    assert stored(s3, h)  # deletes never remove content themselves
    assert m.collect(grace_s=3600).reclaimed == [] and stored(s3, h)  # touched within the grace
    assert m.collect().reclaimed == [] and stored(s3, h)  # the deleted files' links are in the trash
    alice.trash.empty()
    assert m.collect().reclaimed == [h] and not stored(s3, h) and objects.get(h) is None


def test_collector_keeps_content_touched_after_it_read_the_records(env, monkeypatch):
    """A link made while a round runs (after it read the object's gen) keeps the content."""
    fs, s3, objects, m = env
    alice = fs("alice")
    h = upload(alice, s3, os.urandom(6 * 1024 * 1024), "/a")["hash"]
    alice.delete("/a")
    from hycloud_core.store import collector

    real_mark = collector.Collector._mark_efs

    def mark_while_someone_links(self, marks):
        objects.touch(h)  # e.g. a dedup commit of the same content elsewhere
        return real_mark(self, marks)

    monkeypatch.setattr(collector.Collector, "_mark_efs", mark_while_someone_links)
    assert m.collect().reclaimed == [] and stored(s3, h)


def test_collector_skips_a_round_in_which_a_folder_moved(env, monkeypatch):
    fs, s3, objects, m = env
    alice = fs("alice")
    alice.mkdir("/d")
    h = upload(alice, s3, os.urandom(6 * 1024 * 1024), "/d/a")["hash"]
    alice.delete("/d/a")
    from hycloud_core.store import collector

    real_mark = collector.Collector._mark_efs

    def mark_while_a_folder_moves(self, marks):
        alice.move("/d", "/e")
        return real_mark(self, marks)

    monkeypatch.setattr(collector.Collector, "_mark_efs", mark_while_a_folder_moves)
    result = m.collect()
    assert result.skipped and result.reclaimed == [] and stored(s3, h)


def test_dedup_across_users_needs_the_data(env):
    fs, s3, objects, _ = env
    data = os.urandom(6 * 1024 * 1024)
    h = upload(fs("alice"), s3, data, "/a.bin")["hash"]
    assert upload(fs("bob"), s3, data, "/b.bin")["dedup"] is True
    assert objects.get(h)["gen"] == 2  # created, then touched by bob's claim
    assert [e.name for e in fs("bob").ns.listdir("/")[0]] == ["b.bin"]
    # mallory knows the hash and digests, not the bytes
    mallory = fs("mallory")
    digests = [
        hashlib.sha256(data[: content.PART_SIZE]).digest(),
        hashlib.sha256(data[content.PART_SIZE :]).digest(),
    ]
    state = mallory.uploads.start(len(data), h, [content.b64(d) for d in digests])
    with pytest.raises(BadRequestError):
        mallory.commit_large("/stolen", h, content.possession_proof(state["challenge"]["nonce"], [b"guess"]))
    assert not mallory.ns.exists("/stolen") and objects.get(h)["gen"] == 2


def test_start_refuses_a_hash_that_does_not_match_digests(env):
    fs, *_ = env
    with pytest.raises(BadRequestError):
        fs("alice").uploads.start(10, "0" * 64, [content.b64(hashlib.sha256(b"x").digest())])


def test_commit_refuses_incomplete_upload(env):
    fs, s3, objects, _ = env
    alice = fs("alice")
    data = os.urandom(11 * 1024 * 1024)
    digests = [
        hashlib.sha256(data[i : i + content.PART_SIZE]).digest()
        for i in range(0, len(data), content.PART_SIZE)
    ]
    h = content.hash_from_parts(digests)
    state = alice.uploads.start(len(data), h, [content.b64(d) for d in digests])
    assert state["missing"] == [1, 2, 3]
    with pytest.raises(ConflictError) as err:
        alice.commit_large("/x", h)
    assert err.value.code == "upload-incomplete" and not alice.ns.exists("/x") and objects.get(h) is None


def test_overwrite_large_with_small_reclaims_old_content(env):
    fs, s3, objects, m = env
    alice = fs("alice")
    h = upload(alice, s3, os.urandom(6 * 1024 * 1024), "/f")["hash"]
    alice.put_small("/f", b"tiny", hashlib.sha256(b"tiny").hexdigest())
    assert alice.ns.read("/f") == b"tiny" and stored(s3, h)
    assert m.collect().reclaimed == [h] and objects.get(h) is None and not stored(s3, h)


def test_overwrite_retains_old_version_for_deltas(env):
    fs, s3, objects, m = env
    alice = fs("alice")
    alice.retain_s = 3600
    h1 = upload(alice, s3, os.urandom(6 * 1024 * 1024), "/f")["hash"]
    h2 = upload(alice, s3, os.urandom(6 * 1024 * 1024), "/f")["hash"]
    assert alice.readable_versions("/f") == {h1, h2}
    assert fs("bob").readable_versions("/f") == set()
    assert m.collect().reclaimed == [] and stored(s3, h1)  # kept as an old version


def test_version_checked_writes(env):
    fs, s3, objects, m = env
    alice = fs("alice")
    sha = hashlib.sha256(b"one").hexdigest()
    alice.put_small("/v", b"one", sha, expect="")
    with pytest.raises(ConflictError) as err:
        alice.put_small("/v", b"two", "x", expect="")
    assert err.value.code == "version-mismatch"
    with pytest.raises(ConflictError):
        alice.put_small("/v", b"two", "x", expect="0" * 64)
    alice.put_small("/v", b"two", "x", expect=sha)
    assert alice.ns.read("/v") == b"two"
    with pytest.raises(ConflictError):
        alice.delete("/v", expect=sha)
    alice.delete("/v", expect=hashlib.sha256(b"two").hexdigest())
    assert not alice.ns.exists("/v")


def test_directory_copy_move_rmdir(env):
    fs, s3, objects, m = env
    alice = fs("alice")
    alice.mkdir("/d/e", parents=True)
    alice.put_small("/d/e/s.txt", b"small", hashlib.sha256(b"small").hexdigest())
    h = upload(alice, s3, os.urandom(5 * 1024 * 1024 + 1), "/d/big")["hash"]
    alice.copy("/d", "/d2")
    assert alice.ns.read("/d2/e/s.txt") == b"small" and alice.ns.stat("/d2/big").content_hash == h
    with pytest.raises(BadRequestError):
        alice.move("/d", "/d/inside")
    with pytest.raises(ConflictError):
        alice.rmdir("/d2")
    assert alice.rmdir("/d2", recursive=True) == 2
    assert not alice.ns.exists("/d2") and m.collect().reclaimed == [] and stored(s3, h)
    alice.move("/d", "/renamed")
    assert alice.ns.read("/renamed/e/s.txt") == b"small"
    assert {r["path"] for r in alice.records.files_under("alice", "/")} == {
        "/renamed/e/s.txt",
        "/renamed/big",
    }
    with pytest.raises(NotFoundError):
        alice.delete("/d/big")


def test_records_from_before_the_collector_are_read_as_live(env):
    """An upgraded deployment keeps working: `retained` records can be linked again, and an
    unlinked one whose old `expires` passed is reclaimed."""
    fs, s3, objects, m = env
    alice = fs("alice")
    data = os.urandom(6 * 1024 * 1024)
    h = upload(alice, s3, data, "/f")["hash"]
    alice.delete("/f")
    objects.table.put_item(
        Item={"pk": f"OBJ#{h}", "sk": "OBJ", "state": "retained", "refs": 0, "size": len(data), "expires": 1}
    )
    assert objects.is_stored(h) and upload(fs("bob"), s3, data, "/g")["dedup"] is True
    assert objects.get(h)["state"] == "live" and m.collect().reclaimed == []
    fs("bob").delete("/g")
    alice.trash.empty(), fs("bob").trash.empty()  # deleted files' links stay in the trash till then
    objects.table.update_item(
        Key={"pk": f"OBJ#{h}", "sk": "OBJ"},
        UpdateExpression="SET #s = :r REMOVE touched, gen",
        ExpressionAttributeNames={"#s": "state"},
        ExpressionAttributeValues={":r": "retained"},
    )
    assert m.collect().reclaimed == [h] and not stored(s3, h)
