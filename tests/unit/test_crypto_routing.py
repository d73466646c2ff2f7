"""The plain `put`, `get`, `ls` and `sync` into an encrypted folder go through the encrypted engine
(client/hycloud/encrypted/routing.py): nothing plaintext is stored, files come back byte for byte,
and without a key they stop with exit 4 before anything is sent. In-memory stores stand in for
the cloud, one per encrypted folder; a path outside them falls through to the plain client."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from hycloud.encrypted import MemoryStore, routing
from tests.unit.crypto_cli import FakeClient, cheap_keys, routed_cloud, run

MARKER = b"KNOWN-PLAINTEXT-0123456789"


class _Client(FakeClient):
    """The plain client: records what reached it (a path outside any encrypted folder)."""

    def __init__(self) -> None:
        super().__init__()
        self.puts: list[str] = []

    def stat(self, path: str) -> dict:
        from hycloud_core.errors import NotFoundError

        raise NotFoundError(path)

    def open(self, path: str, mode: str = "rb", **kwargs):  # nothing stored under a plain name
        return self.stat(path)

    def get(self, remote: str, local, **kwargs):
        return self.stat(remote)

    def put(self, local, remote: str, **kwargs) -> dict:
        self.puts.append(remote)
        return {"path": remote, "size": Path(local).stat().st_size}


@pytest.fixture
def cloud(monkeypatch, tmp_path) -> dict[str, MemoryStore]:
    """Encrypted folders by root; `headers_at` answers from them as the bundle download would."""
    client = _Client()
    stores = routed_cloud(monkeypatch, client)
    cheap_keys(monkeypatch, tmp_path, "a passphrase")
    stores["client"] = client  # type: ignore[assignment]  # for the fall-through test
    return stores


def _tree(root: Path) -> dict[str, str]:
    files = {
        "plan-secret.txt": MARKER * 50,
        "photos-secret/a.bin": bytes(range(256)) * 900 + MARKER,
        "photos-secret/deep/empty.txt": b"",
    }
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return {rel: hashlib.sha256(data).hexdigest() for rel, data in files.items()}


def _hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


def _plaintext_in(store: MemoryStore) -> list[str]:
    needles = [MARKER, b"secret", b"plan-", b"photos"]
    return [k for k, v in store.objects.items() if any(n in k.encode() + v for n in needles)]


def test_put_r_and_get_r_into_an_encrypted_folder_round_trip_and_store_no_plaintext(cloud, capsys, tmp_path):
    want = _tree(tmp_path / "src")
    assert run(capsys, "mkdir", "--encrypted", "/vault")[0] == 0
    code, out, err = run(capsys, "--json", "put", "-r", str(tmp_path / "src"), "/vault/inbox")
    assert code == 0, err
    assert json.loads(out)["files"] == 3
    assert _plaintext_in(cloud["/vault"]) == []
    assert cloud["client"].puts == []  # the plain client stored nothing

    code, _, err = run(capsys, "get", "-r", "/vault/inbox", str(tmp_path / "back"))
    assert code == 0, err
    assert _hashes(tmp_path / "back") == want

    code, out, _ = run(capsys, "--json", "ls", "/vault/inbox")
    assert code == 0 and [e["name"] for e in json.loads(out)] == ["photos-secret", "plan-secret.txt"]


def test_a_single_put_lands_in_the_folder_and_get_to_stdout_decrypts(cloud, capsys, tmp_path):
    (tmp_path / "note-secret.txt").write_bytes(MARKER)
    run(capsys, "mkdir", "--encrypted", "/vault")
    assert run(capsys, "put", str(tmp_path / "note-secret.txt"), "/vault/")[0] == 0
    assert run(capsys, "put", str(tmp_path / "note-secret.txt"), "/vault/renamed.txt")[0] == 0
    code, out, _ = run(capsys, "ls", "/vault")
    assert code == 0 and out.split() == ["note-secret.txt", "renamed.txt"]
    code, out, _ = run(capsys, "get", "/vault/renamed.txt", "-")
    assert code == 0 and out.encode() == MARKER
    assert run(capsys, "get", "/vault/note-secret.txt", str(tmp_path / "out") + "/")[0] == 0
    assert (tmp_path / "out" / "note-secret.txt").read_bytes() == MARKER
    assert _plaintext_in(cloud["/vault"]) == []


def test_sync_both_ways_with_delete(cloud, capsys, tmp_path):
    src, back = tmp_path / "src", tmp_path / "back"
    _tree(src)
    run(capsys, "mkdir", "--encrypted", "/vault")
    assert run(capsys, "sync", str(src), "hc:/vault")[0] == 0
    assert run(capsys, "sync", "hc:/vault", str(back))[0] == 0
    assert _hashes(back) == _hashes(src)

    (src / "plan-secret.txt").unlink()
    (src / "photos-secret" / "a.bin").write_bytes(b"changed")
    assert run(capsys, "sync", str(src), "hc:/vault", "--delete")[0] == 0
    code, out, _ = run(capsys, "--json", "sync", "hc:/vault", str(back), "--delete")
    assert code == 0 and json.loads(out)["deleted"] == ["plan-secret.txt"]
    assert json.loads(out)["files"] == 1  # the unchanged empty file is not fetched again
    assert _hashes(back) == _hashes(src)
    assert _plaintext_in(cloud["/vault"]) == []


def test_without_a_key_the_plain_commands_stop_before_sending(cloud, capsys, tmp_path, monkeypatch):
    (tmp_path / "a.txt").write_bytes(MARKER)
    run(capsys, "mkdir", "--encrypted", "/vault")
    before = dict(cloud["/vault"].objects)
    monkeypatch.delenv("HYCLOUD_PASSPHRASE")
    monkeypatch.setattr(sys.stdin, "isatty", lambda: False, raising=False)
    code, _, err = run(capsys, "put", str(tmp_path / "a.txt"), "/vault/a.txt")
    assert code == 4 and "key-unavailable" in err and "/vault" in err
    assert cloud["/vault"].objects == before and cloud["client"].puts == []
    code, _, err = run(capsys, "get", "/vault/a.txt", str(tmp_path / "x"))
    assert code == 4 and "HYCLOUD_PASSPHRASE" in err


def test_a_key_file_in_the_environment_opens_the_folder(cloud, capsys, tmp_path, monkeypatch):
    key_file = tmp_path / "key"
    key_file.write_bytes(b"k" * 32)
    (tmp_path / "a.txt").write_bytes(MARKER)
    assert run(capsys, "crypt", "init", "/vault", "--key-file", str(key_file))[0] == 0
    monkeypatch.delenv("HYCLOUD_PASSPHRASE")
    monkeypatch.setenv("HYCLOUD_KEY_FILE", str(key_file))
    assert run(capsys, "put", str(tmp_path / "a.txt"), "/vault/")[0] == 0
    assert run(capsys, "ls", "/vault")[1].split() == ["a.txt"]


def test_a_path_outside_any_encrypted_folder_takes_the_plain_way(cloud, capsys, tmp_path):
    (tmp_path / "a.txt").write_bytes(b"plain")
    run(capsys, "mkdir", "--encrypted", "/vault")
    assert run(capsys, "put", str(tmp_path / "a.txt"), "/docs/a.txt")[0] == 0
    assert cloud["client"].puts == ["/docs/a.txt"]


def test_candidates_are_the_path_and_its_folders_deepest_first():
    assert routing.candidates("/a/b/c.txt") == ["/a/b/c.txt", "/a/b", "/a", "/"]
    assert routing.candidates("/") == ["/"]


def test_locate_takes_the_nearest_encrypted_folder(monkeypatch):
    monkeypatch.setattr(routing, "headers_at", lambda _c, roots: {"/a", "/a/b"} & set(roots))
    assert routing.locate(None, "/a/b/c/d.txt") == routing.Located("/a/b", "c/d.txt")  # type: ignore[arg-type]
    assert routing.locate(None, "/a/b") == routing.Located("/a/b", "")  # type: ignore[arg-type]
    assert routing.locate(None, "/z/b") is None  # type: ignore[arg-type]


def test_watch_and_dry_run_are_refused_for_an_encrypted_folder(cloud, capsys, tmp_path):
    _tree(tmp_path / "src")
    run(capsys, "mkdir", "--encrypted", "/vault")
    for extra in (["--watch-for", "1"], ["--dry-run"]):
        code, _, err = run(capsys, "sync", str(tmp_path / "src"), "hc:/vault", *extra)
        assert code == 2 and "encrypted" in err
    assert _plaintext_in(cloud["/vault"]) == [] and cloud["client"].puts == []


def test_the_sdk_calls_seal_inside_and_fall_through_outside(cloud, tmp_path):
    """routing.put/get/ls: what an SDK program calls instead of HyCloud.put/get/ls."""
    from hycloud.encrypted import EncryptedFolder
    from hycloud.encrypted.counters import Counters

    client = cloud["client"]
    EncryptedFolder.create(
        cloud.setdefault("/vault", MemoryStore()), "alice", b"a passphrase", None, Counters()
    )
    want = _tree(tmp_path / "src")
    sent = routing.put(client, tmp_path / "src", "/vault/in")  # type: ignore[arg-type]
    assert sent["encrypted"] and sent["result"]["files"] == 3 and client.puts == []
    assert [e["name"] for e in routing.ls(client, "/vault/in")] == ["photos-secret", "plan-secret.txt"]  # type: ignore[arg-type]
    got = routing.get(client, "/vault/in", tmp_path / "back")  # type: ignore[arg-type]
    assert got["files"] == 3 and _hashes(tmp_path / "back") == want
    assert _plaintext_in(cloud["/vault"]) == []

    (tmp_path / "plain.txt").write_bytes(b"plain")
    assert routing.put(client, tmp_path / "plain.txt", "/docs/plain.txt")["encrypted"] is False  # type: ignore[arg-type]
    assert client.puts == ["/docs/plain.txt"]
