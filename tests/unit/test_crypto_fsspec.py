"""`hycloud://` inside an encrypted folder: reads and writes go through the encrypted engine (open,
cat, pipe, touch, put/get of files and trees, ls with plaintext names, rm), the cloud stores no
plaintext there, and without a key the path is PermissionError naming the folder. Paths outside
encrypted folders keep their cost: which folders are encrypted is asked once and kept.

The encrypted folder's objects live in the same in-memory cloud as the plain files
(tests/unit/client/cli_fake.py), so its `.hcenc` is what the bundle request and the listings see.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

import pytest

from hycloud import fsspec_fs
from hycloud.encrypted import EncryptedFolder
from hycloud.encrypted.counters import Counters
from hycloud.encrypted.store import version_of
from hycloud.fsspec_fs import HyCloudFileSystem
from hycloud_core.crypto import keys
from hycloud_core.crypto.chunks import DIR as CHUNK_DIR
from tests.unit.client.cli_fake import FakeHyCloud, fake_get_files, fake_put_files
from tests.unit.crypto_fakes import MARKER, FilesStore


class FakeCloudStore(FilesStore):
    """An encrypted folder's objects as files of the fake cloud under `root`."""

    def read_many(self, rels: Iterable[str]) -> dict[str, bytes | None]:
        return {
            r: (self.cloud.files[self._p(r)]["data"] if self._p(r) in self.cloud.files else None)
            for r in rels
        }

    def write_many(self, blobs: Mapping[str, bytes], expect: Mapping[str, str] | None = None) -> set[str]:
        expect = expect or {}
        now = self.read_many(blobs)
        refused = {r for r in blobs if r in expect and version_of(now[r]) != expect[r]}
        for rel, blob in blobs.items():
            if rel not in refused:
                self.cloud.add(self._p(rel), blob)
        return refused

    def _forget_dirs(self, dirs: Iterable[str]) -> None:
        for d in dirs:
            del self.cloud.dirs[d]

    def listing(self, rel: str) -> dict[str, float]:
        prefix = self._p(rel).rstrip("/") + "/"
        return {
            p[len(prefix) :]: 0.0
            for p in self.cloud.files
            if p.startswith(prefix) and "/" not in p[len(prefix) :]
        }


@pytest.fixture
def cloud(monkeypatch, tmp_path) -> FakeHyCloud:
    fake = FakeHyCloud()
    monkeypatch.setattr(fsspec_fs, "make_client", lambda *a, **k: fake)
    monkeypatch.setattr(fsspec_fs.bundles, "put_files", lambda c, *a, **k: fake_put_files(fake, *a, **k))
    monkeypatch.setattr(fsspec_fs.bundles, "get_files", lambda c, *a, **k: fake_get_files(fake, *a, **k))
    monkeypatch.setattr("hycloud.encrypted.vaults.CloudStore", FakeCloudStore)
    monkeypatch.setattr(keys.KdfParams.__init__, "__defaults__", (2**10, 8, 1))  # cheap scrypt
    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "state" / "state.sqlite3"))
    monkeypatch.delenv("HYCLOUD_PASSPHRASE", raising=False)
    monkeypatch.delenv("HYCLOUD_KEY_FILE", raising=False)
    fake.dirs["/vault"] = 0.0
    EncryptedFolder.create(FakeCloudStore(fake, "/vault"), "alice", b"a passphrase", None, Counters())
    fake.add("/docs/plain.txt", b"plain")
    return fake


@pytest.fixture
def fs(cloud) -> HyCloudFileSystem:
    return HyCloudFileSystem(skip_instance_cache=True, passphrase="a passphrase")


def plaintext_stored(cloud: FakeHyCloud) -> list[str]:
    needles = [MARKER, b"secret"]
    return [
        p
        for p, f in cloud.files.items()
        if p.startswith("/vault") and any(n in p.encode() + f["data"] for n in needles)
    ]


def test_writes_inside_are_sealed_and_read_back_with_plaintext_names(fs, cloud):
    with fs.open("hycloud:///vault/secret-a.txt", "wb") as f:
        f.write(MARKER * 3)
    fs.pipe_file("/vault/notes/secret-b.txt", MARKER)
    fs.touch("/vault/notes/empty.txt")
    fs.mkdir("/vault/notes/deeper")

    assert fs.cat_file("/vault/secret-a.txt") == MARKER * 3
    assert fs.cat_file("/vault/secret-a.txt", start=-4) == MARKER[-4:]
    with fs.open("/vault/notes/secret-b.txt", "rb") as f:
        assert f.read() == MARKER
    assert fs.ls("/vault", detail=False) == ["/vault/notes", "/vault/secret-a.txt"]
    assert fs.ls("/vault/notes", detail=False) == [
        "/vault/notes/deeper",
        "/vault/notes/empty.txt",
        "/vault/notes/secret-b.txt",
    ]
    assert fs.info("/vault/notes/secret-b.txt")["size"] == len(MARKER)
    assert fs.isdir("/vault/notes/deeper") and not fs.exists("/vault/none")
    assert plaintext_stored(cloud) == []
    assert not [c for c in cloud.calls if c.startswith("put /vault")]  # the plain upload never ran


def test_put_and_get_of_a_tree_above_the_encrypted_folder(fs, cloud, tmp_path):
    """A tree put at / whose `vault` folder is the encrypted one: its files go sealed, the others plain."""
    src = tmp_path / "src"
    (src / "vault" / "photos").mkdir(parents=True)
    (src / "docs").mkdir()
    (src / "vault" / "photos" / "secret.bin").write_bytes(bytes(range(256)) * 300 + MARKER)
    (src / "vault" / "secret-plan.txt").write_bytes(MARKER)
    (src / "docs" / "b.txt").write_bytes(b"b")
    fs.put(str(src) + "/", "/", recursive=True)
    assert cloud.files["/docs/b.txt"]["data"] == b"b"
    assert plaintext_stored(cloud) == []
    assert fs.ls("/vault/photos", detail=False) == ["/vault/photos/secret.bin"]

    fs.get("/vault", str(tmp_path / "back"), recursive=True)
    for rel in ("photos/secret.bin", "secret-plan.txt"):
        got = (tmp_path / "back" / rel).read_bytes()
        assert hashlib.sha256(got).digest() == hashlib.sha256((src / "vault" / rel).read_bytes()).digest()
    fs.get_file("/vault/secret-plan.txt", str(tmp_path / "one.txt"))
    assert (tmp_path / "one.txt").read_bytes() == MARKER


def test_rm_of_a_file_and_of_a_folder_inside(fs, cloud):
    fs.pipe_file("/vault/a/secret-1.txt", MARKER)
    fs.pipe_file("/vault/a/b/secret-2.txt", MARKER)
    fs.pipe_file("/vault/keep.txt", b"k")
    stored_before = len(cloud.files)
    fs.rm("/vault/a/secret-1.txt")
    assert fs.ls("/vault/a", detail=False) == ["/vault/a/b"]
    fs.rm("/vault/a", recursive=True)
    assert fs.ls("/vault", detail=False) == ["/vault/keep.txt"]
    assert len(cloud.files) < stored_before  # the manifests went too
    assert fs.cat_file("/vault/keep.txt") == b"k"


def test_copy_and_move_across_the_boundary_go_through_the_engine(fs, cloud):
    fs.cp_file("/docs/plain.txt", "/vault/copied.txt")
    assert fs.cat_file("/vault/copied.txt") == b"plain"
    assert not [p for p in cloud.files if p.startswith("/vault") and cloud.files[p]["data"] == b"plain"]
    fs.pipe_file("/vault/secret-out.txt", MARKER)
    fs.mv("/vault/secret-out.txt", "/docs/out.txt")
    assert cloud.files["/docs/out.txt"]["data"] == MARKER and not fs.exists("/vault/secret-out.txt")
    fs.mv("/docs/out.txt", "/vault/back.txt")
    assert fs.cat_file("/vault/back.txt") == MARKER and "/docs/out.txt" not in cloud.files
    assert plaintext_stored(cloud) == []


def test_copy_and_move_within_the_folder_reuse_every_chunk(fs, cloud, monkeypatch):
    """Only names and manifests change: no chunk is read (as a decrypt and seal again would)."""
    data = bytes(range(256)) * 400 + MARKER
    fs.pipe_file("/vault/a/secret.bin", data)
    read: list[str] = []
    read_many = FakeCloudStore.read_many

    def counted(self, rels):
        rels = list(rels)
        read.extend(rels)
        return read_many(self, rels)

    monkeypatch.setattr(FakeCloudStore, "read_many", counted)
    fs.cp_file("/vault/a/secret.bin", "/vault/copy.bin")
    fs.mv("/vault/a", "/vault/b")
    assert read and not [rel for rel in read if rel.startswith(CHUNK_DIR)]
    assert fs.cat_file("/vault/copy.bin") == fs.cat_file("/vault/b/secret.bin") == data
    assert fs.ls("/vault", detail=False) == ["/vault/b", "/vault/copy.bin"]
    assert plaintext_stored(cloud) == []


def test_without_a_key_a_path_inside_is_permission_error_naming_the_folder(cloud):
    fs = HyCloudFileSystem(skip_instance_cache=True)  # no passphrase, none in the environment
    before = dict(cloud.files)
    for attempt in (
        lambda: fs.pipe_file("/vault/secret.txt", MARKER),
        lambda: fs.open("/vault/secret.txt", "wb"),
        lambda: fs.cat_file("/vault/x.txt"),
        lambda: fs.ls("/vault"),
    ):
        with pytest.raises(PermissionError) as err:
            attempt()
        assert "/vault" in str(err.value) and "encrypted" in str(err.value)
    assert cloud.files == before
    assert fs.cat_file("/docs/plain.txt") == b"plain"  # outside: as ever


def test_a_wrong_key_is_permission_error_too(cloud):
    fs = HyCloudFileSystem(skip_instance_cache=True, passphrase="not it")
    with pytest.raises(PermissionError, match="/vault"):
        fs.cat_file("/vault/x.txt")


def test_outside_encrypted_folders_reads_ask_nothing_and_writes_ask_once_per_new_folder(fs, cloud):
    for _ in range(3):
        assert fs.cat_file("/docs/plain.txt") == b"plain"
        fs.ls("/docs")
        fs.info("/docs/plain.txt")
    assert fs.vaults.roots.asked == 0  # plain reads found their paths: nothing to ask
    for i in range(5):
        fs.pipe_file(f"/docs/new-{i}.txt", b"x")
        with fs.open(f"/docs/sub/w-{i}.txt", "wb") as f:
            f.write(b"y")
    # "/" at the first write (/docs was known from its listing), /docs/sub at its first; then kept
    assert fs.vaults.roots.asked == 2
    assert cloud.files["/docs/sub/w-4.txt"]["data"] == b"y"
