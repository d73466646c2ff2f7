"""Encrypted folders on the deployed cloud (docs/ENCRYPTION.md): a tree goes in and comes back
byte for byte through `hycloud crypt`, while S3, EFS and DynamoDB hold neither a plaintext name
nor a known plaintext string; a tampered chunk and a rolled-back listing are refused (the CLI's
exit 9 for them: tests/unit/test_crypto_cli.py)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hycloud.encrypted import CloudStore, EncryptedFolder, download, upload
from hycloud.encrypted.counters import Counters, default_path
from hycloud_core.constants import MiB
from hycloud_core.crypto import chunking
from hycloud_core.crypto import chunks as chunk_format
from hycloud_core.crypto.errors import IntegrityError, RollbackError

# a chunk cut at the largest size that did not compress: its flag byte and padding (at most one
# PAD), the magic and the tag (crypto/chunks.py)
LARGEST_CHUNK_OBJECT = len(chunk_format.MAGIC) + chunking.MAX + chunk_format.PAD + 16

pytestmark = pytest.mark.e2e


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def passphrase(monkeypatch) -> str:
    secret = uuid.uuid4().hex
    monkeypatch.setenv("HYCLOUD_PASSPHRASE", secret)
    return secret


def _tree(root: Path, marker: bytes, tag: str) -> list[str]:
    """A few files (one of 3 MiB, above the small-file threshold were it plain); their names."""
    names = [f"plan-{tag}.txt", f"folder-{tag}", f"photo-{tag}.bin", f"empty-{tag}"]
    (root / names[1]).mkdir(parents=True)
    (root / names[0]).write_bytes(marker * 40)
    (root / names[1] / names[2]).write_bytes(os.urandom(3 * MiB // 2) + marker + os.urandom(3 * MiB // 2))
    (root / names[1] / names[3]).write_bytes(b"")
    return names


def _leaks(blob: bytes, needles: list[bytes]) -> list[bytes]:
    return [n for n in needles if n in blob]


def _scan_s3(deployment, since: datetime, needles: list[bytes]) -> tuple[int, list[str]]:
    """Every object written since `since` in the instances' buckets (older ones cannot hold this
    run's random strings): how many were read, and those holding a needle."""
    s3, read, found = deployment.client("s3"), 0, []
    buckets = [b["Name"] for b in s3.list_buckets()["Buckets"] if b["Name"].startswith("hycloud-instance")]
    for bucket in buckets:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for obj in page.get("Contents", []):
                if obj["LastModified"] < since:
                    continue
                try:
                    body = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
                except s3.exceptions.NoSuchKey:  # removed since listed (a staged bundle, unstaged)
                    continue
                read += 1
                if _leaks(obj["Key"].encode() + b"\n" + body, needles):
                    found.append(f"s3://{bucket}/{obj['Key']}")
    return read, found


def _scan_dynamodb(deployment, needles: list[bytes]) -> tuple[int, list[str]]:
    """Every record of the home table (and the standby's copy): how many, and those leaking."""
    out, read, found = deployment.outputs, 0, []
    tables = [(out["TableName"], "us-east-1")]
    if "StandbyTableName" in out:
        tables.append((out["StandbyTableName"], out["StandbyRegion"]))
    for table, region in tables:
        ddb = deployment.client("dynamodb", region)
        for page in ddb.get_paginator("scan").paginate(TableName=table):
            for item in page["Items"]:
                read += 1
                text = json.dumps(item, default=lambda b: bytes(b).hex() + bytes(b).decode("latin-1"))
                if _leaks(text.encode(), needles):
                    found.append(f"{table}: {item.get('pk')} {item.get('sk')}")
    return read, found


def _scan_efs(user, needles: list[bytes]) -> tuple[int, list[str]]:
    read, found = 0, []
    for path in user.ns_dir().rglob("*"):
        if path.is_file():
            read += 1
            if _leaks(str(path).encode() + b"\n" + path.read_bytes(), needles):
                found.append(str(path))
    return read, found


def test_a_tree_round_trips_and_the_cloud_holds_no_plaintext(alice, deployment, passphrase, tmp_path):
    since = datetime.now(UTC) - timedelta(seconds=5)
    tag = uuid.uuid4().hex[:12]
    marker = f"PLAINTEXT-MARKER-{uuid.uuid4().hex}".encode()
    src, out, root = tmp_path / "src", tmp_path / "out", f"/vault-{tag[:6]}"
    names = _tree(src, marker, tag)

    alice.sdk().mkdir(root)  # `crypt init` does the same (tests/unit/test_crypto_cli.py)
    EncryptedFolder.create(
        CloudStore(alice.sdk(), root), alice.name, passphrase.encode(), counters=_counters()
    )
    alice.cli("crypt", "put", str(src), root)
    alice.cli("crypt", "get", root, str(out))
    for path in src.rglob("*"):
        if path.is_file():
            assert sha(out / path.relative_to(src)) == sha(path), path
    listed = _folder(alice, root, passphrase).ls()
    assert [e["name"] for e in listed] == sorted([names[1], names[0]])
    stored = {e["name"] for e in alice.sdk().ls(root)}
    assert {".hcenc", ".hcchunks", ".hcdir"} <= stored and not any(tag in n for n in stored)

    needles = [marker] + [n.encode() for n in names] + [tag.encode()]
    efs_read, efs_leaks = _scan_efs(alice, needles)
    s3_read, s3_leaks = _scan_s3(deployment, since, needles)
    ddb_read, ddb_leaks = _scan_dynamodb(deployment, needles)
    assert efs_read >= 30 and ddb_read > 0, (efs_read, s3_read, ddb_read)
    assert efs_leaks == [] and s3_leaks == [] and ddb_leaks == []

    # the cloud's own records are of ciphertext: the 3 MiB file is ~48 small chunk objects
    chunks = alice.sdk().ls(f"{root}/.hcchunks")
    assert len(chunks) >= 20 and all(e["size"] <= LARGEST_CHUNK_OBJECT for e in chunks)


def test_a_rolled_back_listing_and_a_tampered_chunk_are_refused(alice, passphrase, tmp_path):
    sdk, root = alice.sdk(), f"/vault-{uuid.uuid4().hex[:6]}"
    sdk.mkdir(root)
    folder = EncryptedFolder.create(
        CloudStore(sdk, root), alice.name, passphrase.encode(), counters=_counters()
    )
    (tmp_path / "a.bin").write_bytes(os.urandom(200_000))
    (tmp_path / "b.txt").write_bytes(b"second")
    upload.put_file(folder, tmp_path / "a.bin", "a.bin")
    old_listing = sdk.get_bytes(f"{root}/.hcdir")
    upload.put_file(folder, tmp_path / "b.txt", "b.txt")
    new_listing = sdk.get_bytes(f"{root}/.hcdir")

    sdk.put_bytes(f"{root}/.hcdir", old_listing)  # the cloud serves the older name map
    with pytest.raises(RollbackError):
        _folder(alice, root, passphrase).ls()
    sdk.put_bytes(f"{root}/.hcdir", new_listing)
    assert [e["name"] for e in _folder(alice, root, passphrase).ls()] == ["a.bin", "b.txt"]

    chunk = sdk.ls(f"{root}/.hcchunks")[0]["name"]  # a.bin's or b.txt's: the whole folder is read
    blob = bytearray(sdk.get_bytes(f"{root}/.hcchunks/{chunk}"))
    blob[50] ^= 0x01
    sdk.put_bytes(f"{root}/.hcchunks/{chunk}", bytes(blob))
    with pytest.raises(IntegrityError, match="swapped"):  # its bytes no longer match its name
        download.get(_folder(alice, root, passphrase), "", tmp_path / "out")
    written = [p.name for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert len(written) < 2  # the file whose chunk was altered is never written


def _counters() -> Counters:
    return Counters(default_path())  # the CLI's too: $HYCLOUD_STATE of this test session


def _folder(user, root: str, passphrase: str) -> EncryptedFolder:
    return EncryptedFolder.open(CloudStore(user.sdk(), root), user.name, passphrase.encode(), _counters())


class _Racing(CloudStore):
    """The cloud store, with another device's put run once just before this device's commit."""

    meanwhile = None

    def write_many(self, blobs, expect=None):
        if expect and self.meanwhile:
            run, self.meanwhile = self.meanwhile, None
            run()
        return super().write_many(blobs, expect)


def test_two_devices_putting_at_once_keep_both_files(alice, passphrase, tmp_path):
    """The cloud refuses a name map another device changed (version-mismatch on the bundle
    member's expected version); the device reads it again, adds its entry and sends it again."""
    sdk, root = alice.sdk(), f"/vault-{uuid.uuid4().hex[:6]}"
    sdk.mkdir(root)
    EncryptedFolder.create(CloudStore(sdk, root), alice.name, passphrase.encode(), counters=Counters())
    racing = _Racing(sdk, root)
    phone = EncryptedFolder.open(racing, alice.name, passphrase.encode(), Counters())
    laptop = EncryptedFolder.open(CloudStore(sdk, root), alice.name, passphrase.encode(), Counters())
    (tmp_path / "a").write_bytes(b"from the phone")
    (tmp_path / "b").write_bytes(b"from the laptop")
    racing.meanwhile = lambda: upload.put_file(laptop, tmp_path / "b", "b.txt")
    before = sdk.get_bytes(f"{root}/.hcdir")
    upload.put_file(phone, tmp_path / "a", "a.txt")
    assert sdk.get_bytes(f"{root}/.hcdir") != before
    reader = EncryptedFolder.open(CloudStore(sdk, root), alice.name, passphrase.encode(), Counters())
    assert sorted(e["name"] for e in reader.ls()) == ["a.txt", "b.txt"]
    download.get(reader, "", tmp_path / "out")
    assert (tmp_path / "out" / "a.txt").read_bytes() == b"from the phone"
    assert (tmp_path / "out" / "b.txt").read_bytes() == b"from the laptop"


def test_plain_put_r_and_get_r_go_through_an_encrypted_folder(alice, deployment, passphrase, tmp_path):
    """`hycloud put -r` / `get -r` / `ls` (not `crypt ...`) into an encrypted folder: the header of
    the path's folders is found in one request, and the tree is sealed on the client."""
    since = datetime.now(UTC) - timedelta(seconds=5)
    tag = uuid.uuid4().hex[:12]
    marker = f"PLAINTEXT-MARKER-{uuid.uuid4().hex}".encode()
    src, out, root = tmp_path / "src", tmp_path / "out", f"/vault-{tag[:6]}"
    names = _tree(src, marker, tag)

    alice.cli("mkdir", "--encrypted", root)
    alice.cli("put", "-r", str(src), f"{root}/inbox")
    alice.cli("get", "-r", f"{root}/inbox", str(out))
    for path in src.rglob("*"):
        if path.is_file():
            assert sha(out / path.relative_to(src)) == sha(path), path
    listed = json.loads(alice.cli("--json", "ls", f"{root}/inbox").stdout)
    assert [e["name"] for e in listed] == sorted([names[1], names[0]])

    needles = [marker] + [n.encode() for n in names] + [tag.encode()]
    assert _scan_efs(alice, needles)[1] == []
    assert _scan_s3(deployment, since, needles)[1] == []
    assert _scan_dynamodb(deployment, needles)[1] == []


def _vault_with(alice, tmp_path: Path, marker: bytes) -> tuple[str, Path]:
    """A new encrypted folder holding one file put by the CLI (400 KiB: several chunks)."""
    root, local = f"/vault-{uuid.uuid4().hex[:6]}", tmp_path / "cli-secret.bin"
    local.write_bytes(os.urandom(200_000) + marker + os.urandom(200_000))
    alice.cli("mkdir", "--encrypted", root)
    alice.cli("put", str(local), f"{root}/")
    return root, local


def test_cp_and_mv_within_an_encrypted_folder_reuse_its_chunks(alice, deployment, passphrase, tmp_path):
    """Only manifests and name maps are written: the chunk objects stay as they are."""
    marker = f"PLAINTEXT-MARKER-{uuid.uuid4().hex}".encode()
    root, local = _vault_with(alice, tmp_path, marker)
    chunks = {e["name"] for e in alice.sdk().ls(f"{root}/.hcchunks")}
    alice.cli("cp", f"{root}/cli-secret.bin", f"{root}/copy-secret.bin")
    alice.cli("mv", f"{root}/copy-secret.bin", f"{root}/inner-secret/moved-secret.bin")
    assert {e["name"] for e in alice.sdk().ls(f"{root}/.hcchunks")} == chunks
    for rel in ("cli-secret.bin", "inner-secret/moved-secret.bin"):
        alice.cli("get", f"{root}/{rel}", str(tmp_path / "back" / rel))
        assert sha(tmp_path / "back" / rel) == sha(local), rel
    assert [e["name"] for e in _folder(alice, root, passphrase).ls()] == ["cli-secret.bin", "inner-secret"]
    needles = [marker, b"copy-secret", b"moved-secret", b"inner-secret"]
    assert _scan_efs(alice, needles)[1] == [] and _scan_dynamodb(deployment, needles)[1] == []


def test_a_file_written_through_the_mount_is_sealed_and_read_back_by_the_cli(alice, passphrase, tmp_path):
    from tests.e2e.mounting import CANNOT_MOUNT, start_mount

    if CANNOT_MOUNT:
        pytest.skip(CANNOT_MOUNT)
    marker = f"PLAINTEXT-MARKER-{uuid.uuid4().hex}".encode()
    root, local = _vault_with(alice, tmp_path, marker)
    (tmp_path / "m").mkdir()
    mount = start_mount(alice, tmp_path / "m")  # the key comes from $HYCLOUD_PASSPHRASE, as the CLI's
    try:
        inside = mount.dir / root.strip("/")
        assert sorted(p.name for p in inside.iterdir()) == ["cli-secret.bin"]  # plaintext names
        assert (inside / "cli-secret.bin").read_bytes() == local.read_bytes()
        data = os.urandom(300_000) + marker
        (inside / "docs").mkdir()
        (inside / "docs" / "mount-secret.bin").write_bytes(data)  # sealed and sent by close()
        os.rename(inside / "cli-secret.bin", inside / "docs" / "renamed-secret.bin")  # chunks reused
        plain = mount.dir / f"plain-{uuid.uuid4().hex[:6]}"
        plain.mkdir()
        (plain / "in-secret.txt").write_bytes(marker)
        shutil.move(plain / "in-secret.txt", inside / "in-secret.txt")  # EXDEV: copied in, sealed
    finally:
        mount.stop()
    alice.cli("get", "-r", f"{root}", str(tmp_path / "back"))
    assert (tmp_path / "back" / "docs" / "mount-secret.bin").read_bytes() == data
    assert (tmp_path / "back" / "docs" / "renamed-secret.bin").read_bytes() == local.read_bytes()
    assert (tmp_path / "back" / "in-secret.txt").read_bytes() == marker
    assert not (tmp_path / "back" / "cli-secret.bin").exists()
    assert (
        _scan_efs(alice, [marker, b"mount-secret", b"cli-secret", b"renamed-secret", b"in-secret"])[1] == []
    )


def test_a_put_through_webdav_is_sealed_and_read_back_by_the_cli(alice, passphrase, tmp_path):
    import subprocess
    import time

    import requests

    from tests.e2e.conftest import HYCLOUD
    from tests.e2e.test_webdav import _free_port

    marker = f"PLAINTEXT-MARKER-{uuid.uuid4().hex}".encode()
    root, local = _vault_with(alice, tmp_path, marker)
    port = _free_port()
    env = {**os.environ, "HYCLOUD_CONFIG": "/nonexistent/config.json"}  # the key: $HYCLOUD_PASSPHRASE
    argv = [HYCLOUD, "serve", "webdav", "--port", str(port), "--endpoint", alice.deployment.api_url]
    with open(tmp_path / "dav.log", "wb") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    url, auth = f"http://127.0.0.1:{port}{root}", (alice.name, alice.key)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.options(url, timeout=2)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline, (tmp_path / "dav.log").read_text()
                time.sleep(0.2)
        got = requests.get(f"{url}/cli-secret.bin", auth=auth, timeout=60)
        assert got.status_code == 200 and got.content == local.read_bytes()
        data = os.urandom(100_000) + marker
        assert requests.put(f"{url}/dav-secret.bin", data=data, auth=auth, timeout=60).status_code == 201
        listed = requests.request("PROPFIND", url + "/", auth=auth, headers={"Depth": "1"}, timeout=60)
        assert listed.status_code == 207 and b"dav-secret.bin" in listed.content
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    alice.cli("get", f"{root}/dav-secret.bin", str(tmp_path / "back.bin"))
    assert (tmp_path / "back.bin").read_bytes() == data
    assert _scan_efs(alice, [marker, b"dav-secret", b"cli-secret"])[1] == []
