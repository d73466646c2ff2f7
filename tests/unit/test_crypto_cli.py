"""`hycloud crypt` and `hycloud key rotate` over an in-memory store: the commands' wiring, the
passphrase from the environment, exit 9 on a tampered chunk and exit 4 on a wrong passphrase."""

from __future__ import annotations

import json

import pytest

from hycloud.encrypted import MemoryStore
from hycloud_core.crypto import chunks
from tests.unit.crypto_cli import FakeClient, cheap_keys, memory_cloud, run


@pytest.fixture
def store(monkeypatch, tmp_path) -> MemoryStore:
    shared = memory_cloud(monkeypatch, FakeClient())
    cheap_keys(monkeypatch, tmp_path, "first passphrase")
    return shared


def test_init_put_ls_get_and_rotate(store, capsys, tmp_path, monkeypatch):
    (tmp_path / "src" / "docs").mkdir(parents=True)
    (tmp_path / "src" / "docs" / "plan.txt").write_bytes(b"the plan")
    assert run(capsys, "crypt", "init", "/vault")[0] == 0
    assert run(capsys, "crypt", "put", str(tmp_path / "src"), "/vault")[0] == 0
    code, out, _ = run(capsys, "--json", "crypt", "ls", "/vault", "docs")
    assert code == 0 and [e["name"] for e in json.loads(out)] == ["plan.txt"]

    monkeypatch.setenv("HYCLOUD_NEW_PASSPHRASE", "second passphrase")
    assert run(capsys, "key", "rotate", "/vault")[0] == 0
    code, _, err = run(capsys, "crypt", "ls", "/vault")
    assert code == 4 and "wrong-key" in err  # the old passphrase opens nothing now
    monkeypatch.setenv("HYCLOUD_PASSPHRASE", "second passphrase")
    assert run(capsys, "crypt", "get", "/vault", str(tmp_path / "back"))[0] == 0
    assert (tmp_path / "back" / "docs" / "plan.txt").read_bytes() == b"the plan"


def test_a_tampered_chunk_exits_9_and_writes_nothing(store, capsys, tmp_path):
    (tmp_path / "a.txt").write_bytes(b"some bytes" * 1000)
    run(capsys, "crypt", "init", "/vault")
    run(capsys, "crypt", "put", str(tmp_path / "a.txt"), "/vault")
    (name,) = store.chunk_names()
    store.objects[chunks.object_path(name)] = store.objects[chunks.object_path(name)][:-1]
    code, _, err = run(capsys, "crypt", "get", "/vault", str(tmp_path / "out.txt"), "--path", "a.txt")
    assert code == 9 and "integrity-failed" in err
    assert not (tmp_path / "out.txt").exists()


def test_help_says_a_lost_passphrase_is_unrecoverable(capsys):
    code, out, _ = run(capsys, "crypt", "--help")
    assert code == 0 and "unrecoverable" in " ".join(out.split())


def test_mkdir_encrypted_makes_the_folder_crypt_commands_use(store, capsys, tmp_path):
    (tmp_path / "n.txt").write_bytes(b"a note")
    assert run(capsys, "mkdir", "--encrypted", "/vault2")[0] == 0
    assert run(capsys, "crypt", "put", str(tmp_path / "n.txt"), "/vault2")[0] == 0
    code, out, _ = run(capsys, "--json", "crypt", "ls", "/vault2")
    assert code == 0 and [e["name"] for e in json.loads(out)] == ["n.txt"]
    assert run(capsys, "mkdir", "--encrypted", "/vault2")[0] != 0  # already an encrypted folder


def test_gc_counts_with_dry_run_and_refuses_a_short_grace(store, capsys, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.bin").write_bytes(bytes(range(256)) * 400)
    run(capsys, "crypt", "init", "/vault")
    run(capsys, "crypt", "put", str(tmp_path / "src"), "/vault")
    (tmp_path / "src" / "a.bin").unlink()
    run(capsys, "crypt", "sync", str(tmp_path / "src"), "/vault")
    code, out, _ = run(capsys, "--json", "crypt", "gc", "/vault", "--dry-run")
    assert code == 0 and json.loads(out)["young"] >= 1 and json.loads(out)["removed"] == 0
    code, _, err = run(capsys, "crypt", "gc", "/vault", "--grace", "1m")
    assert code == 2 and "grace" in err
    assert store.chunk_names()  # nothing removed
