"""What the encrypted-folder CLI tests share: cheap keys, a state store of the test's own, and
the CLI run in-process with its exit code and output."""

from __future__ import annotations

from pathlib import Path

import pytest

from hycloud.cli.main import main
from hycloud.encrypted import MemoryStore
from hycloud_core.crypto import keys


def cheap_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, passphrase: str) -> None:
    """A cheap scrypt (the real cost is tested in test_crypto_keys), this test's state, its passphrase."""
    monkeypatch.setattr(keys.KdfParams.__init__, "__defaults__", (2**10, 8, 1))
    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "state" / "state.sqlite3"))
    monkeypatch.setenv("HYCLOUD_PASSPHRASE", passphrase)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`hycloud ARGS` in this process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as ended:
        main(list(args))
        raise SystemExit(0)
    out = capsys.readouterr()
    return int(ended.value.code or 0), out.out, out.err


class FakeClient:
    """The SDK client as the `crypt` commands use it, signed in as alice; `http` when they ask it."""

    def __init__(self, http: object | None = None) -> None:
        self.http = http

    def whoami(self) -> str:
        return "alice"

    def mkdir(self, path: str, parents: bool = False) -> dict:
        return {"path": path}


def memory_cloud(monkeypatch: pytest.MonkeyPatch, client: FakeClient) -> MemoryStore:
    """One in-memory store behind every encrypted folder the CLI opens, and `client` as its SDK."""
    shared = MemoryStore()
    monkeypatch.setattr("hycloud.encrypted.CloudStore", lambda client, root: shared)
    monkeypatch.setattr("hycloud.sdk.client.HyCloud.from_config", classmethod(lambda cls, *a, **k: client))
    return shared


def routed_cloud(monkeypatch: pytest.MonkeyPatch, client: FakeClient) -> dict[str, MemoryStore]:
    """An in-memory store per encrypted folder (by root), found by the routing as the bundle
    download of headers would find it, and `client` as the plain SDK."""
    stores: dict[str, MemoryStore] = {}

    def store_at(_client: object, root: str) -> MemoryStore:
        return stores.setdefault(root, MemoryStore())

    monkeypatch.setattr("hycloud.encrypted.CloudStore", store_at)
    monkeypatch.setattr("hycloud.encrypted.routing.CloudStore", store_at)
    monkeypatch.setattr(
        "hycloud.encrypted.routing.headers_at",
        lambda _c, roots: {r for r in roots if ".hcenc" in stores.get(r, MemoryStore()).objects},
    )
    monkeypatch.setattr("hycloud.sdk.client.HyCloud.from_config", classmethod(lambda cls, *a, **k: client))
    return stores
