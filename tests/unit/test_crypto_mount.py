"""The mount inside an encrypted folder, with the key in the environment (as the CLI takes it):
plaintext names listed, files decrypted on open and sealed on close through the encrypted upload
path (not the write-back cache's plaintext bundles), renames within the folder reusing chunks,
EXDEV across its edge. What the mount writes the SDK reads byte for byte and the other way round;
the cloud holds no plaintext. Without a key the mount keeps refusing writes
(tests/unit/test_crypto_mount_dav.py)."""

from __future__ import annotations

import errno
import os
import posixpath
from collections.abc import Iterable, Mapping

import mfusepy as fuse
import pytest

from hycloud.encrypted import EncryptedFolder, files, upload
from hycloud.encrypted.counters import Counters
from hycloud.encrypted.store import version_of
from hycloud.mount.fuse_ops import HyCloudFuse
from hycloud_core.crypto.chunks import DIR as CHUNK_DIR
from tests.unit.client.test_mount_writeback import FakeCloud, _ancestors
from tests.unit.crypto_cli import cheap_keys
from tests.unit.crypto_fakes import MARKER, FilesStore, put_through_sdk
from tests.unit.test_crypto_folder import CHEAP

VAULT = "/data/vault"


class FakeStore(FilesStore):
    """An encrypted folder's objects as files of the write-back tests' fake cloud under `root`,
    so the mount's listings see its header and ciphertext."""

    cloud: FakeCloud

    def read_many(self, rels: Iterable[str]) -> dict[str, bytes | None]:
        return {r: self.cloud.files.get(self._p(r)) for r in rels}

    def write_many(self, blobs: Mapping[str, bytes], expect: Mapping[str, str] | None = None) -> set[str]:
        expect = expect or {}
        refused = {
            r for r in blobs if r in expect and version_of(self.cloud.files.get(self._p(r))) != expect[r]
        }
        for rel, blob in blobs.items():
            if rel not in refused:
                self.cloud.files[self._p(rel)] = blob
                self.cloud.dirs.update(_ancestors(self._p(rel)))
        return refused

    def _forget_dirs(self, dirs: Iterable[str]) -> None:
        self.cloud.dirs.difference_update(dirs)

    def listing(self, rel: str) -> dict[str, float]:
        prefix = self._p(rel) + "/"
        return {p[len(prefix) :]: 1.0 for p in self.cloud.files if posixpath.dirname(p) + "/" == prefix}


@pytest.fixture
def mounted(tmp_path, monkeypatch):
    from hycloud.sdk import bundles

    cheap_keys(monkeypatch, tmp_path, "pw")
    monkeypatch.setattr(bundles, "put_files", lambda client, pairs: client.upload(pairs))
    fake = FakeCloud()
    fake.dirs |= {"/data", "/data/plain"}
    monkeypatch.setattr("hycloud.encrypted.vaults.CloudStore", FakeStore)
    folder = EncryptedFolder.create(FakeStore(fake, VAULT), "alice", b"pw", CHEAP, Counters())
    ops = HyCloudFuse(fake, cache_dir=str(tmp_path))  # type: ignore[arg-type]
    yield ops, fake, folder
    ops.finish()


def _write(ops: HyCloudFuse, path: str, data: bytes) -> None:
    fh = ops.create(path, 0o644)
    ops.write(path, data, 0, fh)
    ops.flush(path, fh)  # close(): sealed and sent now
    ops.release(path, fh)


def _read(ops: HyCloudFuse, path: str) -> bytes:
    fh = ops.open(path, os.O_RDONLY)
    try:
        return ops.read(path, 1 << 24, 0, fh)
    finally:
        ops.release(path, fh)


def _fresh(folder: EncryptedFolder) -> EncryptedFolder:
    return EncryptedFolder.open(folder.store, "alice", b"pw", Counters())


def _no_plaintext(fake: FakeCloud) -> None:
    assert not any(MARKER in blob for blob in fake.files.values())
    assert not any(w in p for p in fake.files for w in ("secret", "docs", "renamed"))


def test_a_file_written_through_the_mount_is_sealed_and_reads_back_through_the_sdk(mounted):
    ops, fake, folder = mounted
    ops.mkdir("/data/vault/docs", 0o755)
    data = MARKER * 5000
    _write(ops, "/data/vault/docs/note-secret.txt", data)
    assert fake.batches == []  # not through the write-back cache's plaintext bundles
    assert files.read_bytes(_fresh(folder), "docs/note-secret.txt") == data
    assert ops.readdir("/data/vault", 0) == [".", "..", "docs"]
    assert ops.readdir("/data/vault/docs", 0) == [".", "..", "note-secret.txt"]
    assert ops.getattr("/data/vault/docs/note-secret.txt")["st_size"] == len(data)
    _no_plaintext(fake)


def test_what_the_sdk_put_reads_decrypted_through_the_mount(mounted, tmp_path):
    ops, fake, folder = mounted
    data = put_through_sdk(folder, tmp_path / "in.bin", "in/put-secret.bin", 300_000)
    ops.readdir("/data/vault", 0)
    assert ops.getattr("/data/vault/in")["st_mode"] & 0o040000
    assert _read(ops, "/data/vault/in/put-secret.bin") == data
    with pytest.raises(fuse.FuseOSError) as err:
        ops.getattr("/data/vault/in/absent.txt")
    assert err.value.errno == errno.ENOENT


def test_a_new_file_is_listed_and_stat_ed_before_its_close(mounted):
    ops, _, folder = mounted
    ops.readdir("/data/vault", 0)
    fh = ops.create("/data/vault/new-secret.txt", 0o644)
    ops.write("/data/vault/new-secret.txt", b"abc", 0, fh)
    assert ops.getattr("/data/vault/new-secret.txt")["st_size"] == 3
    assert "new-secret.txt" in ops.readdir("/data/vault", 0)
    ops.release("/data/vault/new-secret.txt", fh)  # release sends what flush did not
    assert files.read_bytes(_fresh(folder), "new-secret.txt") == b"abc"


def test_rename_within_the_folder_truncate_unlink_and_rmdir(mounted):
    ops, fake, folder = mounted
    ops.readdir("/data/vault", 0)
    ops.mkdir("/data/vault/docs", 0o755)
    _write(ops, "/data/vault/docs/a-secret.txt", MARKER * 100)
    chunks = FakeStore(fake, VAULT).chunk_names()
    ops.rename("/data/vault/docs/a-secret.txt", "/data/vault/renamed-secret.txt")
    assert FakeStore(fake, VAULT).chunk_names() == chunks  # no chunk sealed or sent again
    assert _read(ops, "/data/vault/renamed-secret.txt") == MARKER * 100
    ops.truncate("/data/vault/renamed-secret.txt", 10)
    assert files.read_bytes(_fresh(folder), "renamed-secret.txt") == MARKER[:10]
    ops.unlink("/data/vault/renamed-secret.txt")
    ops.rmdir("/data/vault/docs")
    assert ops.readdir("/data/vault", 0) == [".", ".."]
    assert _fresh(folder).ls() == []
    _no_plaintext(fake)


def test_renames_across_the_folder_s_edge_are_exdev_so_mv_copies(mounted):
    ops, fake, _ = mounted
    ops.readdir("/data/vault", 0)
    _write(ops, "/data/vault/in-secret.txt", MARKER)
    _write(ops, "/data/plain/out.txt", b"plain")
    for old, new in (
        ("/data/vault/in-secret.txt", "/data/plain/x"),
        ("/data/plain/out.txt", "/data/vault/x"),
    ):
        with pytest.raises(fuse.FuseOSError) as err:
            ops.rename(old, new)
        assert err.value.errno == errno.EXDEV
    ops.rename("/data/plain/out.txt", "/data/plain/moved.txt")  # plain renames as ever
    ops.cache.sync(ops.cache.under("/"))
    assert fake.files["/data/plain/moved.txt"] == b"plain"


def test_a_file_open_at_unmount_is_sealed_then(mounted):
    ops, _, folder = mounted
    ops.readdir("/data/vault", 0)
    fh = ops.create("/data/vault/late-secret.txt", 0o644)
    ops.write("/data/vault/late-secret.txt", MARKER, 0, fh)
    assert ops.finish() == []
    assert files.read_bytes(_fresh(folder), "late-secret.txt") == MARKER


def test_a_read_beside_a_write_does_not_hide_another_device_s_change(mounted, monkeypatch, tmp_path):
    """A listing read while a file is being sealed (another device having written meanwhile) must
    not change the version the write replaces: the write is refused, merged, and both stay."""
    ops, fake, folder = mounted
    ops.readdir("/data/vault", 0)
    other = EncryptedFolder.open(FakeStore(fake, VAULT), "alice", b"pw", Counters())
    (tmp_path / "b").write_bytes(b"from the other device")
    write_many, fired = FakeStore.write_many, []

    def racing(self, blobs, expect=None):
        if not fired and any(rel.startswith(CHUNK_DIR) for rel in blobs):  # the chunks go first
            fired.append(True)
            upload.put_file(other, tmp_path / "b", "b.txt")
            ops.sealed.view._maps.clear()  # the kept name maps expired
            assert "b.txt" in ops.readdir("/data/vault", 0)  # a reader in the mount meanwhile
        return write_many(self, blobs, expect)

    monkeypatch.setattr(FakeStore, "write_many", racing)
    _write(ops, "/data/vault/a.txt", MARKER)
    assert fired and sorted(e["name"] for e in _fresh(folder).ls()) == ["a.txt", "b.txt"]
