"""`hycloud crypt add-user DIR USER`: another user's key slot opens the same folder key (nothing
re-encrypted); an unknown user is refused before any slot is written; a header another writer
changed meanwhile is not overwritten."""

from __future__ import annotations

import pytest

from hycloud.encrypted import EncryptedFolder, MemoryStore, upload
from hycloud.encrypted.counters import Counters
from hycloud_core.crypto import header as hdr
from hycloud_core.crypto import keys
from hycloud_core.errors import ConflictError, NotFoundError
from tests.unit.crypto_cli import FakeClient, cheap_keys, memory_cloud, run

USERS = {"alice", "bob"}


class _Http:
    def json(self, method: str, route: str, **_) -> dict:
        name = route.rsplit("/", 1)[-1]
        if (method, route) != ("GET", f"/v1/users/{name}") or name not in USERS:
            raise NotFoundError(f"no user {name}", code="no-such-user")
        return {"user": name}


@pytest.fixture
def store(monkeypatch, tmp_path) -> MemoryStore:
    shared = memory_cloud(monkeypatch, FakeClient(_Http()))
    cheap_keys(monkeypatch, tmp_path, "alice's passphrase")
    monkeypatch.setenv("HYCLOUD_NEW_PASSPHRASE", "bob's first passphrase")
    return shared


def test_an_added_user_opens_the_folder_with_their_own_secret(store, capsys, tmp_path):
    (tmp_path / "a.txt").write_bytes(b"for bob too")
    run(capsys, "crypt", "init", "/vault")
    run(capsys, "crypt", "put", str(tmp_path / "a.txt"), "/vault")
    chunks_before = {k: v for k, v in store.objects.items() if k.startswith(".hcchunks/")}
    code, out, err = run(capsys, "crypt", "add-user", "/vault", "bob")
    assert code == 0, err
    assert sorted(hdr.parse(store.objects[".hcenc"]).slots) == ["alice", "bob"]

    bob = EncryptedFolder.open(store, "bob", b"bob's first passphrase", Counters())
    assert [e["name"] for e in bob.ls()] == ["a.txt"]
    alice = EncryptedFolder.open(store, "alice", b"alice's passphrase", Counters())
    assert alice.keys == bob.keys  # one folder key: nothing was re-encrypted
    assert {k: v for k, v in store.objects.items() if k.startswith(".hcchunks/")} == chunks_before
    upload.put_file(bob, tmp_path / "a.txt", "from-bob.txt")
    assert [e["name"] for e in alice.ls()] == ["a.txt", "from-bob.txt"]


def test_an_unknown_user_is_refused_and_nothing_is_written(store, capsys):
    run(capsys, "crypt", "init", "/vault")
    before = store.objects[".hcenc"]
    code, _, err = run(capsys, "crypt", "add-user", "/vault", "mallory")
    assert code == 5 and "no-such-user" in err and "mallory" in err
    assert store.objects[".hcenc"] == before


def test_a_user_with_a_slot_already_is_refused(store, capsys):
    run(capsys, "crypt", "init", "/vault")
    assert run(capsys, "crypt", "add-user", "/vault", "bob")[0] == 0
    code, _, err = run(capsys, "crypt", "add-user", "/vault", "bob")
    assert code == 9 and "already" in err


def test_a_header_changed_meanwhile_is_not_overwritten(store):
    folder = EncryptedFolder.create(store, "alice", b"alice's passphrase", keys.KdfParams(2**10))
    other = EncryptedFolder.open(store, "alice", b"alice's passphrase", Counters())
    other.rotate("alice", b"alice's passphrase", b"new one", keys.KdfParams(2**10))
    with pytest.raises(ConflictError):
        folder.add_user("bob", b"alice's passphrase", b"bob's", keys.KdfParams(2**10))
    assert sorted(hdr.parse(store.objects[".hcenc"]).slots) == ["alice"]
    assert EncryptedFolder.open(store, "alice", b"new one", Counters())  # the rotation stands
