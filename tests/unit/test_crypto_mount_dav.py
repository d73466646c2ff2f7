"""Without the folder's key in their environment, the mount and the WebDAV server write nothing
inside an encrypted folder: the mount answers EACCES (and says why on stderr) to create, mkdir,
open for writing, truncate and rename into one; WebDAV answers 403 to PUT, MKCOL, COPY and MOVE
into one. Reads of the sealed objects are left as they are (ciphertext). Outside, both work as
before, and which folders are encrypted is asked once and kept. With the key they read and write
through the encrypted engine (test_crypto_mount.py, test_crypto_webdav.py)."""

from __future__ import annotations

import errno
import os

import mfusepy as fuse
import pytest

from hycloud.mount.fuse_ops import HyCloudFuse
from tests.unit.client.test_dav_caches import DavCloud, Gateway, cloud, gateway  # noqa: F401 (fixtures)
from tests.unit.client.test_mount_writeback import FakeCloud

HEADER = b'{"v":1}'


def _with_vault(fake: FakeCloud) -> FakeCloud:
    fake.dirs |= {"/data", "/data/vault", "/data/plain"}
    fake.files["/data/vault/.hcenc"] = HEADER
    fake.files["/data/vault/.hcdir"] = b"sealed map"
    return fake


@pytest.fixture(autouse=True)
def no_key(monkeypatch):
    monkeypatch.delenv("HYCLOUD_PASSPHRASE", raising=False)
    monkeypatch.delenv("HYCLOUD_KEY_FILE", raising=False)


@pytest.fixture
def mounted(tmp_path, monkeypatch):
    from hycloud.sdk import bundles

    monkeypatch.setattr(bundles, "put_files", lambda client, pairs: client.upload(pairs))
    fake = _with_vault(FakeCloud())
    ops = HyCloudFuse(fake, cache_dir=str(tmp_path))  # type: ignore[arg-type]
    yield ops, fake
    ops.cache.stop()


def _eacces(action) -> None:
    with pytest.raises(fuse.FuseOSError) as err:
        action()
    assert err.value.errno == errno.EACCES


def test_the_mount_refuses_writes_inside_an_encrypted_folder(mounted, capsys):
    ops, fake = mounted
    before = dict(fake.files)
    _eacces(lambda: ops.create("/data/vault/secret.txt", 0o644))
    _eacces(lambda: ops.mkdir("/data/vault/sub", 0o755))
    _eacces(lambda: ops.open("/data/vault/.hcdir", os.O_WRONLY))
    _eacces(lambda: ops.truncate("/data/vault/.hcdir", 0))
    fh = ops.create("/data/plain/draft.txt", 0o644)  # outside: as ever
    ops.write("/data/plain/draft.txt", b"draft", 0, fh)
    ops.release("/data/plain/draft.txt", fh)
    _eacces(lambda: ops.rename("/data/plain/draft.txt", "/data/vault/draft.txt"))
    assert (
        "refused create /data/vault/secret.txt: /data/vault is an encrypted folder" in capsys.readouterr().err
    )
    ops.cache.sync(ops.cache.under("/"))
    assert fake.files["/data/plain/draft.txt"] == b"draft"
    assert {p: d for p, d in fake.files.items() if p.startswith("/data/vault")} == before
    assert fake.http.asked == 2  # /data/vault, /data and / together at the first write; /data/plain once


def test_the_mount_moves_a_whole_encrypted_folder_and_writes_in_folders_it_made(mounted):
    ops, fake = mounted
    ops.mkdir("/data/plain/new", 0o755)
    ops.release("/data/plain/new/a.txt", ops.create("/data/plain/new/a.txt", 0o644))
    ops.rename("/data/vault", "/data/plain/vault")  # the ciphertext moves with its header
    assert fake.files["/data/plain/vault/.hcenc"] == HEADER


def test_webdav_answers_403_to_writes_inside_an_encrypted_folder(cloud, gateway):  # noqa: F811
    dav, _ = gateway
    _with_vault(cloud)
    cloud.files["/data/plain/a.txt"] = b"a"
    before = dict(cloud.files)
    assert dav("PUT", "/data/vault/secret.txt", b"KNOWN-PLAINTEXT")[0] == 403
    assert dav("PUT", "/data/vault/.hcdir", b"over the map")[0] == 403
    assert dav("MKCOL", "/data/vault/sub/")[0] == 403
    dest = "http://127.0.0.1:8080/data/vault/a.txt"
    assert dav("COPY", "/data/plain/a.txt", Destination=dest)[0] == 403
    assert dav("MOVE", "/data/plain/a.txt", Destination=dest)[0] == 403
    assert dav("COPY", "/data/plain/", Destination="http://127.0.0.1:8080/data/vault/p/")[0] == 403
    assert cloud.files == before
    assert dav("PUT", "/data/plain/b.txt", b"b")[0] == 201  # outside: as ever
