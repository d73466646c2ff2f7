"""WebDAV inside an encrypted folder, with the key in the server's environment: PROPFIND lists the
plaintext names, GET decrypts, PUT seals the body (through the encrypted upload path, not the
write-back cache's plaintext bundles), COPY/MOVE within the folder reuse every chunk, and across
its edge the bytes are decrypted or sealed here. The cloud holds no plaintext. Without a key the
server keeps answering 403 to writes (tests/unit/test_crypto_mount_dav.py)."""

from __future__ import annotations

import pytest

from hycloud.encrypted import EncryptedFolder, files
from hycloud.encrypted.counters import Counters
from tests.unit.client.test_dav_caches import DavCloud, Gateway, cloud  # noqa: F401 (a fixture)
from tests.unit.crypto_cli import cheap_keys
from tests.unit.crypto_fakes import MARKER, put_through_sdk
from tests.unit.test_crypto_folder import CHEAP
from tests.unit.test_crypto_mount import VAULT, FakeStore

HOST = "http://127.0.0.1:8080"


@pytest.fixture
def dav(cloud, tmp_path, monkeypatch):  # noqa: F811
    from hycloud.webdav.server import make_app
    from hycloud.webdav.workspaces import Workspaces

    cheap_keys(monkeypatch, tmp_path, "pw")
    monkeypatch.setattr("hycloud.encrypted.vaults.CloudStore", FakeStore)
    cloud.dirs |= {"/data", "/data/plain"}
    cloud.put = lambda local, path, **_: cloud.upload([(local, path)])[0]  # the SDK's single put
    folder = EncryptedFolder.create(FakeStore(cloud, VAULT), "alice", b"pw", CHEAP, Counters())
    workspaces = Workspaces(str(tmp_path), ttl=30.0)
    yield Gateway(make_app("http://unused", verbose=0, workspaces=workspaces)), cloud, folder
    workspaces.stop()


def _fresh(folder: EncryptedFolder) -> EncryptedFolder:
    return EncryptedFolder.open(folder.store, "alice", b"pw", Counters())


def _no_plaintext(fake: DavCloud) -> None:
    assert not any(MARKER in blob for path, blob in fake.files.items() if path.startswith(VAULT))
    assert not any(w in p for p in fake.files if p.startswith(VAULT) for w in ("secret", "docs", "copy"))


def test_a_put_is_sealed_and_reads_back_through_the_sdk_and_a_get(dav):
    gateway, fake, folder = dav
    assert gateway("MKCOL", "/data/vault/docs/")[0] == 201
    body = MARKER * 3000
    assert gateway("PUT", "/data/vault/docs/put-secret.txt", body)[0] == 201
    assert files.read_bytes(_fresh(folder), "docs/put-secret.txt") == body  # in the fake when answered
    assert fake.batches == []  # not the write-back cache's plaintext bundles
    assert gateway("GET", "/data/vault/docs/put-secret.txt") == (200, body)
    status, listing = gateway("PROPFIND", "/data/vault/", Depth="1")
    assert status == 207 and b"/data/vault/docs/" in listing and b".hcenc" not in listing
    status, listing = gateway("PROPFIND", "/data/vault/docs/", Depth="1")
    assert status == 207 and b"put-secret.txt" in listing
    _no_plaintext(fake)


def test_what_the_sdk_put_is_listed_and_got_decrypted(dav, tmp_path):
    gateway, fake, folder = dav
    data = put_through_sdk(folder, tmp_path / "a.bin", "in/sdk-secret.bin", 200_000)
    assert gateway("GET", "/data/vault/in/sdk-secret.bin") == (200, data)
    assert gateway("GET", "/data/vault/in/absent.bin")[0] == 404


def test_copy_move_and_delete_within_and_across_the_folder(dav):
    gateway, fake, folder = dav
    gateway("PUT", "/data/vault/a-secret.txt", MARKER)
    chunks = FakeStore(fake, VAULT).chunk_names()
    assert (
        gateway("COPY", "/data/vault/a-secret.txt", Destination=f"{HOST}/data/vault/copy-secret.txt")[0]
        == 201
    )
    assert gateway("MOVE", "/data/vault/copy-secret.txt", Destination=f"{HOST}/data/vault/m.txt")[0] == 201
    assert FakeStore(fake, VAULT).chunk_names() == chunks  # within the folder: no chunk again
    assert gateway("MOVE", "/data/vault/m.txt", Destination=f"{HOST}/data/plain/out.txt")[0] == 201
    assert fake.files["/data/plain/out.txt"] == MARKER  # decrypted on the way out, as asked
    fake.files["/data/plain/in.txt"] = b"plain in"
    assert gateway("COPY", "/data/plain/in.txt", Destination=f"{HOST}/data/vault/in.txt")[0] == 201
    assert gateway("DELETE", "/data/vault/a-secret.txt")[0] == 204
    fresh = _fresh(folder)
    assert [e["name"] for e in fresh.ls()] == ["in.txt"]
    assert files.read_bytes(fresh, "in.txt") == b"plain in"
    _no_plaintext(fake)
