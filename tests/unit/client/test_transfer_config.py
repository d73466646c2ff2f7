"""TransferConfig: the client's transfer settings in one place, with the defaults the client
always had, passed from the SDK (and the CLI's --transfers) down to each transfer."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace
from pathlib import Path

import pytest

from hycloud.sdk import HyCloud
from hycloud.sdk import client as sdk_client
from hycloud.transfer import upload
from hycloud.transfer.config import DEFAULT, TransferConfig
from hycloud_core import content
from tests.unit.client.cli_fake import LinkAnswer, cloud, run  # noqa: F401 - the fixture

MiB = 2**20


def test_the_defaults_are_the_settings_the_client_always_used():
    assert (DEFAULT.workers, DEFAULT.relay_workers, DEFAULT.streams_per_instance, DEFAULT.files) == (
        8,
        4,
        4,
        4,
    )
    assert (DEFAULT.part_size, DEFAULT.relay_piece) == (content.PART_SIZE, 4 * MiB)
    assert (DEFAULT.part_timeout, DEFAULT.block_timeout, DEFAULT.stage_timeout) == (300, (10, 120), 600)
    assert (DEFAULT.attempts, DEFAULT.block_attempts) == (4, 3)
    assert DEFAULT.backoff(0, _Fixed(0.0)) == pytest.approx(0.2)  # the direct download's first wait


class _Fixed:
    def __init__(self, value: float) -> None:
        self.value = value

    def random(self) -> float:
        return self.value


def test_sdk_users_find_it_beside_the_client():
    import hycloud

    assert hycloud.TransferConfig is TransferConfig and "TransferConfig" in hycloud.__all__


def test_it_is_frozen_and_refuses_nonsense():
    with pytest.raises(FrozenInstanceError):
        DEFAULT.workers = 2  # type: ignore[misc]
    for bad in ({"workers": 0}, {"attempts": 0}, {"part_size": 0}, {"jitter": 1.5}, {"backoff_s": -1}):
        with pytest.raises(ValueError):
            TransferConfig(**bad)  # type: ignore[arg-type]
    assert replace(DEFAULT, workers=2).workers == 2 and DEFAULT.workers == 8


def test_the_sdk_keeps_its_config_and_defaults_to_the_default(tmp_path, monkeypatch):
    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "s.sqlite3"))
    mine = TransferConfig(workers=3)
    assert HyCloud("http://unused", "key", transfer=mine).transfer is mine
    assert HyCloud("http://unused", "key").transfer is DEFAULT
    failing_over = HyCloud("http://unused", "key", standby="http://standby", transfer=mine)
    assert failing_over.http.transfer is mine  # type: ignore[attr-defined] - replays large uploads with it


def test_a_large_put_and_get_carry_the_sdks_config(tmp_path, monkeypatch):
    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "s.sqlite3"))
    mine = TransferConfig(workers=2, part_size=MiB)
    sdk = HyCloud("http://unused", "key", transfer=mine)
    sdk._threshold, sdk._coded_threshold = 10, None
    seen: dict[str, TransferConfig] = {}

    def fake_upload(http, local, remote, parents, progress, keep=None, headers=None, config=DEFAULT):
        seen["up"] = config
        return {"path": remote, "content_hash": content.hash_file(local)[0], "sent_bytes": 0}

    def fake_download(info, local, progress=None, renew=None, config=DEFAULT):
        seen["down"] = config
        Path(local).write_bytes(b"y" * 100)
        return Path(local)

    monkeypatch.setattr(sdk_client, "upload_large", fake_upload)
    monkeypatch.setattr(sdk_client, "download_large", fake_download)
    monkeypatch.setattr(
        sdk, "_fetch", lambda path: LinkAnswer({"path": path, "content_hash": "h", "size": 100})
    )
    src = tmp_path / "src"
    src.write_bytes(b"x" * 100)
    sdk.put(src, "/f", via="direct")
    sdk.get("/f", tmp_path / "out", via="direct")
    assert seen == {"up": mine, "down": mine}


def test_upload_parts_go_as_many_at_once_as_the_config_says(tmp_path, monkeypatch):
    seen: list[int] = []

    def fake_parallel(fn, items, workers):
        seen.append(workers)
        return iter(())

    monkeypatch.setattr(upload, "run_parallel", fake_parallel)
    state = {"parts_done": [], "missing": [1], "content_hash": "h", "urls": {"1": "http://s3/1"}}
    upload._upload_parts(None, tmp_path, 1, state, [b""], upload.Progress(), TransferConfig(workers=5))  # type: ignore[arg-type]
    assert seen == [5]


def test_transfers_sets_the_clients_files_in_flight(cloud, monkeypatch, tmp_path):  # noqa: F811
    made: list[TransferConfig | None] = []
    monkeypatch.setattr(
        HyCloud,
        "from_config",
        classmethod(lambda cls, profile=None, transfer=None: made.append(transfer) or cloud),
    )
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a").write_bytes(b"a")
    assert run("put", "-r", "--transfers", "7", str(tmp_path / "d"), "/d") == 0
    assert made == [TransferConfig(files=7)]
    made.clear()
    assert run("put", "-r", str(tmp_path / "d"), "/e") == 0
    assert made == [None]  # the default
