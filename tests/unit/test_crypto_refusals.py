"""The ways in that are not routed through the encrypted engine refuse to write inside an encrypted
folder, before anything is sent: `hycloud touch` into one, and `put -r`/`sync` aimed
above one whose local tree reaches into it (found by the header among the exchange's answers).
Exit 2 and `encrypted-folder` on stderr, like the other refusals of encrypted folders."""

from __future__ import annotations

import pytest

from hycloud.encrypted import guard
from tests.unit.client.cli_fake import FakeHyCloud, cloud, run  # noqa: F401 (a fixture)

HEADER = b'{"v":1}'  # what is there matters not: the header's name marks the folder


@pytest.fixture
def vault(cloud: FakeHyCloud, monkeypatch) -> FakeHyCloud:  # noqa: F811
    monkeypatch.setattr("hycloud.cli.targets._resumable", lambda *a: False)  # no job to resume
    cloud.add("/data/vault/.hcenc", HEADER)
    cloud.add("/data/vault/.hcdir", b"sealed map")
    cloud.add("/data/plain.txt", b"plain")
    return cloud


def _refused(capsys, code: int) -> None:
    assert code == 2
    assert "encrypted-folder" in capsys.readouterr().err


def _writes(fake: FakeHyCloud) -> list[str]:
    return [c for c in fake.calls if c.split()[0] in ("put", "cp", "mv", "put_files", "mkdir")]


def test_touch_into_an_encrypted_folder_is_refused(vault, capsys):
    before = dict(vault.files)
    _refused(capsys, run("touch", "/data/ok.txt", "/data/vault/new.txt"))
    assert vault.files == before and _writes(vault) == []  # not even the first touch


def test_cp_and_mv_into_an_encrypted_folder_without_its_key_send_nothing(vault, capsys, monkeypatch):
    """They go through the encrypted engine (tests/unit/test_crypto_cp_mv.py), which needs the key."""
    import sys

    monkeypatch.delenv("HYCLOUD_PASSPHRASE", raising=False)
    monkeypatch.delenv("HYCLOUD_KEY_FILE", raising=False)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: False, raising=False)
    before = dict(vault.files)
    for args in (("cp", "/data/plain.txt", "/data/vault/"), ("mv", "/data/plain.txt", "/data/vault/m.txt")):
        code = run(*args)
        assert code == 4 and "key-unavailable" in capsys.readouterr().err
    assert vault.files == before and _writes(vault) == []


def test_cp_mv_and_touch_elsewhere_still_work(vault):
    assert run("cp", "/data/plain.txt", "/data/copy.txt") == 0
    assert run("touch", "/data/new.txt") == 0
    assert run("mv", "/data/vault", "/data/vault2") == 0  # the whole encrypted folder moves: ciphertext
    assert vault.files["/data/vault2/.hcenc"]["data"] == HEADER


def test_put_r_aimed_above_an_encrypted_folder_that_reaches_into_it_is_refused(vault, capsys, tmp_path):
    src = tmp_path / "src"
    (src / "vault").mkdir(parents=True)
    (src / "vault" / "secret.txt").write_bytes(b"KNOWN-PLAINTEXT")
    (src / "other.txt").write_bytes(b"o")
    before = dict(vault.files)
    _refused(capsys, run("put", "-r", str(src), "/data"))
    assert vault.files == before and _writes(vault) == []


def test_sync_push_above_an_encrypted_folder_that_reaches_into_it_is_refused(tmp_path, monkeypatch):
    from hycloud.sync import sync
    from tests.unit.sync_fake_cloud import FakeCloud, FileByFile, write

    monkeypatch.setattr("hycloud.sync.executor.bundles", FileByFile)
    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "state.sqlite3"))
    remote, local = FakeCloud(), tmp_path / "src"
    remote.dirs |= {"/data", "/data/vault"}
    remote.files["/data/vault/.hcenc"] = (HEADER, 1.0)
    write(local / "vault" / "secret.txt", b"KNOWN-PLAINTEXT")
    write(local / "other.txt", b"o")
    with pytest.raises(guard.EncryptedFolderError, match="/data/vault"):
        sync(remote, local, "/data", "push")
    assert set(remote.files) == {"/data/vault/.hcenc"}  # nothing sent, not even other.txt
    (local / "vault" / "secret.txt").unlink()
    (local / "vault").rmdir()
    assert sync(remote, local, "/data", "push")["files"] == 1  # a tree beside it goes


def test_a_tree_that_does_not_reach_the_encrypted_folder_goes(vault, tmp_path):
    src = tmp_path / "src"
    (src / "docs").mkdir(parents=True)
    (src / "docs" / "a.txt").write_bytes(b"a")
    assert run("put", "-r", str(src), "/data") == 0
    assert vault.files["/data/docs/a.txt"]["data"] == b"a"


def test_encrypted_among_finds_the_folders_by_their_header():
    rels = ["a/b/.hcenc", "a/b/x", ".hcenc", "c/d.txt", "e/.hcenc.bak"]
    assert guard.encrypted_among("/r", rels) == ["/r", "/r/a/b"]
    assert guard.encrypted_among("/", ["v/.hcenc"]) == ["/v"]
