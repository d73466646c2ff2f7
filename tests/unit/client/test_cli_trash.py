"""`hycloud trash ls|restore|empty` and `rm`'s answer: what the CLI asks the SDK and prints."""

from __future__ import annotations

import json

import pytest

from hycloud_core.errors import BadRequestError
from tests.unit.client.cli_fake import run

ITEM = "1764400000000-0a1b2c3d"
LISTED = {
    "item": ITEM,
    "path": "/photos",
    "type": "dir",
    "size": 2048,
    "files": 3,
    "at": 1764400000.0,
    "by": "u-1",
}


class TrashSdk:
    """The SDK's trash calls, recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def trash(self) -> dict:
        self.calls.append(("trash",))
        return {"items": [LISTED], "retention_s": 30 * 86400}

    def trash_restore(self, item: str, to: str | None = None) -> dict:
        self.calls.append(("restore", item, to))
        return {"restored": LISTED, "entry": {"path": to or "/photos", "type": "dir"}}

    def trash_empty(self, item: str | None = None, progress=None) -> dict:
        self.calls.append(("empty", item))
        return {"emptied": [ITEM]}


@pytest.fixture
def sdk(monkeypatch) -> TrashSdk:
    fake = TrashSdk()
    monkeypatch.setattr("hycloud.cli.trash._client", lambda: fake)
    return fake


def test_ls_restore_and_empty_call_the_sdk_and_say_what_happened(sdk, capsys):
    assert run("trash", "ls") == 0
    out = capsys.readouterr().out
    assert ITEM in out and "/photos" in out and "kept 30 days" in out
    assert run("trash", "restore", ITEM, "--to", "/photos.old") == 0
    assert "restored /photos -> /photos.old" in capsys.readouterr().out
    assert run("--json", "trash", "empty") == 0
    assert json.loads(capsys.readouterr().out) == {"emptied": [ITEM]}
    assert sdk.calls == [("trash",), ("restore", ITEM, "/photos.old"), ("empty", None)]


def test_the_sdk_refuses_a_malformed_item_before_any_request():
    from hycloud.sdk.client import HyCloud

    client = HyCloud.__new__(HyCloud)  # no transport: a request would fail differently
    for call in (lambda: client.trash_restore("../x"), lambda: client.trash_empty("latest")):
        with pytest.raises(BadRequestError):
            call()


def test_admin_sets_and_resets_a_users_own_trash_retention(moto_filesystems, capsys):
    from hycloud import admin
    from hycloud_core.store.trash_records import TrashRecords
    from tests.conftest import MOTO_TABLE

    made = admin.create_account(MOTO_TABLE, "erin")
    records = TrashRecords(moto_filesystems.records.table, made["id"])
    assert run("admin", "set-trash-retention", "erin", "--table", MOTO_TABLE, "--days", "2") == 0
    assert records.retention(30 * 86400) == 2 * 86400
    assert run("admin", "set-trash-retention", "erin", "--table", MOTO_TABLE, "--reset") == 0
    assert records.retention(30 * 86400) == 30 * 86400
    assert run("admin", "set-trash-retention", "erin", "--table", MOTO_TABLE) == 2  # neither given
    assert run("admin", "set-trash-retention", "nobody", "--table", MOTO_TABLE, "--days", "1") != 0
