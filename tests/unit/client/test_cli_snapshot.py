"""`hycloud snapshot create|ls|get|restore|rm`: what the CLI asks the SDK and prints."""

from __future__ import annotations

import json

import pytest

from tests.unit.client.cli_fake import run

SNAP = {
    "name": "before",
    "id": "1764400000000-0a1b2c3d",
    "path": "/photos",
    "at": 1764400000.0,
    "by": "u-1",
    "files": 2,
    "bytes": 2048,
    "state": "ready",
}
ENTRY = {"name": "a.jpg", "path": "/a.jpg", "type": "file", "size": 5, "mtime": 1764400000.0}


class SnapshotSdk:
    """The SDK's snapshot calls, recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def create(self, path: str, name: str | None = None, progress: object = None) -> dict:
        self.calls.append(("create", path, name))
        return SNAP

    def list(self) -> dict:
        self.calls.append(("list",))
        return {"snapshots": [SNAP], "totals": {"bytes": 2048, "files": 2, "snapshots": 1}}

    def ls(self, name: str, path: str = "/"):
        self.calls.append(("ls", name, path))
        yield ENTRY

    def get_bytes(self, name: str, path: str) -> bytes:
        self.calls.append(("get", name, path))
        return b"alpha"

    def restore(
        self,
        name: str,
        path: str = "/",
        to: str | None = None,
        replace: bool = False,
        progress: object = None,
    ) -> dict:
        self.calls.append(("restore", name, path, to, replace))
        return {"restored": SNAP, "entry": {"path": to or "/photos", "type": "dir"}}

    def rm(self, name: str) -> dict:
        self.calls.append(("rm", name))
        return {"removed": SNAP}


@pytest.fixture
def sdk(monkeypatch) -> SnapshotSdk:
    fake = SnapshotSdk()
    monkeypatch.setattr("hycloud.cli.snapshot._snapshots", lambda: fake)
    return fake


def test_each_command_calls_the_sdk_and_says_what_happened(sdk, capsys, tmp_path):
    assert run("snapshot", "create", "/photos", "--name", "before") == 0
    assert "snapshot before of /photos: 2 files" in capsys.readouterr().out
    assert run("snapshot", "ls") == 0
    out = capsys.readouterr().out
    assert "before" in out and "/photos" in out and "1 snapshot(s)" in out
    assert run("snapshot", "ls", "before", "/") == 0
    assert "a.jpg" in capsys.readouterr().out
    assert run("snapshot", "get", "before", "/a.jpg", str(tmp_path)) == 0
    assert (tmp_path / "a.jpg").read_bytes() == b"alpha"
    capsys.readouterr()
    assert run("snapshot", "restore", "before", "--to", "/photos.old") == 0
    assert "restored before:/ -> /photos.old" in capsys.readouterr().out
    assert run("--json", "snapshot", "rm", "before") == 0
    assert json.loads(capsys.readouterr().out) == {"removed": SNAP}
    assert sdk.calls == [
        ("create", "/photos", "before"),
        ("list",),
        ("ls", "before", "/"),
        ("get", "before", "/a.jpg"),
        ("restore", "before", "/", "/photos.old", False),
        ("rm", "before"),
    ]


def test_restore_with_replace_passes_it(sdk, capsys):
    assert run("snapshot", "restore", "before", "/a.jpg", "--replace") == 0
    assert sdk.calls == [("restore", "before", "/a.jpg", None, True)]
