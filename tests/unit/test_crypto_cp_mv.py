"""`hycloud cp` and `mv` with an end inside an encrypted folder (encrypted/crossing.py): within one
folder every chunk is reused (no chunk sent, only manifests and maps); into another encrypted
folder, in from plain storage or out to it, the files are decrypted and sealed again here. The
copies read back byte for byte and no plaintext is stored inside. A plain cp/mv is untouched.
In-memory stores stand in for the encrypted folders, a dict of files for plain storage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hycloud.encrypted import MemoryStore
from hycloud_core.errors import NotFoundError
from tests.unit.crypto_cli import FakeClient, cheap_keys, routed_cloud, run

MARKER = b"KNOWN-PLAINTEXT-0123456789"
BIG = bytes(range(256)) * 1200 + MARKER


class _Plain(FakeClient):
    """Plain storage: files by path (folders are the prefixes)."""

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, bytes] = {"/plain/in.txt": MARKER * 2}
        self.calls: list[str] = []

    def stat(self, path: str) -> dict:
        if path in self.files:
            return {"type": "file", "path": path}
        if any(p.startswith(path.rstrip("/") + "/") for p in self.files):
            return {"type": "dir", "path": path}
        raise NotFoundError(path)

    def get(self, remote: str, local, **kwargs) -> Path:
        self.stat(remote)
        Path(local).write_bytes(self.files[remote])
        return Path(local)

    def put(self, local, remote: str, **kwargs) -> dict:
        self.calls.append(f"put {remote}")
        self.files[remote] = Path(local).read_bytes()
        return {"path": remote}

    def rm(self, path: str) -> dict:
        self.calls.append(f"rm {path}")
        del self.files[path]
        return {"path": path}

    def cp(self, src: str, dst: str, **kwargs) -> dict:
        self.calls.append(f"cp {src} {dst}")
        return {"path": dst}


@pytest.fixture
def cloud(monkeypatch, tmp_path) -> tuple[dict[str, MemoryStore], _Plain]:
    plain = _Plain()
    stores = routed_cloud(monkeypatch, plain)
    monkeypatch.setattr("hycloud.cli.targets._resumable", lambda *a: False)
    cheap_keys(monkeypatch, tmp_path, "a passphrase")
    src = tmp_path / "src"
    (src / "docs").mkdir(parents=True)
    (src / "docs" / "big-secret.bin").write_bytes(BIG)
    (src / "docs" / "note-secret.txt").write_bytes(MARKER)
    return stores, plain


def _vault(capsys, tmp_path: Path, root: str = "/vault") -> None:
    assert run(capsys, "mkdir", "--encrypted", root)[0] == 0
    assert run(capsys, "put", "-r", str(tmp_path / "src"), root)[0] == 0


def _get(capsys, tmp_path: Path, remote: str) -> bytes:
    target = tmp_path / "back" / remote.strip("/").replace("/", "_")
    code, _, err = run(capsys, "get", remote, str(target))
    assert code == 0, err
    return target.read_bytes()


def _no_plaintext(store: MemoryStore) -> None:
    assert not any(MARKER in blob for blob in store.objects.values())
    assert not any(w in key for key in store.objects for w in ("secret", "docs", "copy", "moved", "in.txt"))


def test_cp_and_mv_within_an_encrypted_folder_reuse_every_chunk(cloud, capsys, tmp_path):
    stores, plain = cloud
    _vault(capsys, tmp_path)
    chunks = set(stores["/vault"].chunk_names())
    code, out, err = run(capsys, "--json", "cp", "/vault/docs/big-secret.bin", "/vault/copy.bin")
    assert code == 0, err
    assert json.loads(out)["reused"] is True and json.loads(out)["chunks_reused"] >= 2
    assert run(capsys, "cp", "-r", "/vault/docs", "/vault/copy-dir")[0] == 0
    assert run(capsys, "mv", "/vault/docs/note-secret.txt", "/vault/copy-dir/")[0] == 0  # into a folder
    assert set(stores["/vault"].chunk_names()) == chunks  # nothing new sealed
    assert _get(capsys, tmp_path, "/vault/copy.bin") == BIG
    assert _get(capsys, tmp_path, "/vault/copy-dir/big-secret.bin") == BIG
    assert _get(capsys, tmp_path, "/vault/copy-dir/note-secret.txt") == MARKER
    assert run(capsys, "ls", "/vault/docs")[1].split() == ["big-secret.bin"]
    assert plain.calls == [] and set(plain.files) == {"/plain/in.txt"}
    _no_plaintext(stores["/vault"])


def test_across_keys_and_to_and_from_plain_storage_the_bytes_go_through_here(cloud, capsys, tmp_path):
    stores, plain = cloud
    _vault(capsys, tmp_path)
    _vault(capsys, tmp_path, "/other")
    assert run(capsys, "cp", "/vault/docs/big-secret.bin", "/other/copy.bin")[0] == 0  # another key
    assert run(capsys, "mv", "/plain/in.txt", "/vault/")[0] == 0  # sealed in, then removed
    assert run(capsys, "cp", "/vault/docs/note-secret.txt", "/plain/out.txt")[0] == 0  # decrypted out
    assert _get(capsys, tmp_path, "/other/copy.bin") == BIG
    assert _get(capsys, tmp_path, "/vault/in.txt") == MARKER * 2
    assert plain.files["/plain/out.txt"] == MARKER
    assert "/plain/in.txt" not in plain.files
    assert plain.calls == ["rm /plain/in.txt", "put /plain/out.txt"]
    _no_plaintext(stores["/vault"])
    _no_plaintext(stores["/other"])


def test_a_whole_encrypted_folder_goes_plain_but_never_into_another(cloud, capsys, tmp_path):
    stores, plain = cloud
    _vault(capsys, tmp_path)
    _vault(capsys, tmp_path, "/other")
    before = {root: dict(store.objects) for root, store in stores.items()}
    code, _, err = run(capsys, "mv", "/vault", "/other/inner")
    assert code == 2 and "encrypted-folder" in err
    assert {root: store.objects for root, store in stores.items()} == before
    assert run(capsys, "cp", "/vault", "/plain/vault-copy")[0] == 0  # the plain copy of ciphertext
    assert plain.calls == ["cp /vault /plain/vault-copy"]


def test_without_a_key_nothing_is_copied(cloud, capsys, tmp_path, monkeypatch):
    import sys

    stores, plain = cloud
    _vault(capsys, tmp_path)
    before = dict(stores["/vault"].objects)
    monkeypatch.delenv("HYCLOUD_PASSPHRASE")
    monkeypatch.setattr(sys.stdin, "isatty", lambda: False, raising=False)
    code, _, err = run(capsys, "cp", "/vault/docs/note-secret.txt", "/vault/copy.txt")
    assert code == 4 and "key-unavailable" in err
    code, _, err = run(capsys, "mv", "/plain/in.txt", "/vault/in.txt")
    assert code == 4 and "/plain/in.txt" in plain.files
    assert stores["/vault"].objects == before


def test_dry_run_and_filters(cloud, capsys, tmp_path):
    stores, _ = cloud
    _vault(capsys, tmp_path)
    before = dict(stores["/vault"].objects)
    code, out, _ = run(capsys, "cp", "--dry-run", "/vault/docs", "/vault/copy")
    assert code == 0 and "would copy" in out
    code, _, err = run(capsys, "cp", "--exclude", "*.bin", "/vault/docs", "/vault/copy")
    assert code == 2 and "bad-usage" in err
    assert stores["/vault"].objects == before
