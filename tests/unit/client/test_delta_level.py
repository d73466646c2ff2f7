"""The client's zstd level for version-aware deltas: eq. 2 from the endpoint's measured link rate
and γ (level.py), carried on download requests and used by uploads."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from hycloud.transfer import auto
from hycloud.transfer.delta import delta_from_known, delta_upload
from hycloud.versions import VersionStore
from hycloud_core.delta import level, versioned

ENDPOINT = "http://cloud.test"


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "state.sqlite3"))
    return VersionStore(ENDPOINT, "any key")


def test_download_level_follows_the_measured_link(store):
    # no rates yet: the paper's 50 Mbit/s, γ 0.98: level 3 7.6e-9 + 3.2e-9 s/B, level 12 4.0e-8 + 1.8e-9
    assert auto.chosen_level(ENDPOINT, "down", 10**8) == 3
    store.add_rate("down", 1e3)
    assert auto.chosen_level(ENDPOINT, "down", 10**8) == 19
    store.add_rate("down", 1.25e9)
    store.add_rate("down", 1.25e9)  # the median of the recent rates: now fast
    assert auto.chosen_level(ENDPOINT, "down", 10**8) == 3


def test_measured_gamma_keeps_a_small_delta_fast(store):
    store.add_rate("down", 1e6)
    assert auto.chosen_level(ENDPOINT, "down", 10**8) == 3  # no γ yet: level.GAMMA, 0.98
    store.add_rate("gamma", 0.9)  # γ learned from a job: more bytes to save, level 6 wins
    assert auto.chosen_level(ENDPOINT, "down", 10**8) == 6
    store.add_rate("gamma", 0.96)
    store.add_rate("gamma", 0.96)  # the median of the recent γ: 0.96, level 3 again
    assert auto.chosen_level(ENDPOINT, "down", 10**8) == 3


def test_upload_table_is_probed_once_and_kept(store, monkeypatch):
    probes = []
    monkeypatch.setattr(level, "probe_rates", lambda: probes.append(1) or dict(level.REFERENCE_PROBE))
    assert auto.chosen_level(ENDPOINT, "up", 10**8, link_rate=1e3) == 19
    assert auto.chosen_level(ENDPOINT, "up", 10**8, link_rate=1.25e9) == 3
    assert probes == [1] and store.rate("zstd_speed") == 1.0


class Recorder:
    base = ENDPOINT

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict]] = []

    def request(self, method: str, route: str, **kw) -> SimpleNamespace:
        self.calls.append((method, route, kw))
        answer = {"state": "same", "file": {"content_hash": "h", "size": 1}}
        return SimpleNamespace(headers={"Content-Type": "application/json"}, json=lambda: answer)


def test_download_request_carries_the_chosen_level(store):
    store.add_rate("down", 1e3)
    http = Recorder()
    assert delta_from_known(http, "/f", "h") == ({"path": "/f", "content_hash": "h", "size": 1}, None)
    assert http.calls[0][2]["params"]["level"] == 19
    delta_from_known(http, "/f", "h", level=5)
    assert http.calls[1][2]["params"]["level"] == 5


def test_upload_encodes_at_the_chosen_level(store, tmp_path, monkeypatch):
    old, new = level.probe_pair(64 * 1024)
    (tmp_path / "old").write_bytes(old)
    (tmp_path / "new").write_bytes(new)
    monkeypatch.setattr(level, "probe_rates", lambda: dict(level.REFERENCE_PROBE))
    used = []
    encode = versioned.encode
    monkeypatch.setattr(versioned, "encode", lambda *a, **kw: used.append(kw["level"]) or encode(*a, **kw))
    for rate in (1e3, 1.25e9):  # the delta is computed before anything is sent: stop at the send
        with pytest.raises(Sent):
            delta_upload(
                Unreachable(), tmp_path / "new", "/f", tmp_path / "old", rate, base_hash="b", force=True
            )
    assert used == [19, 3]


class Sent(Exception):
    pass


class Unreachable:
    base = ENDPOINT

    def __getattr__(self, name: str):
        def call(*a, **kw):
            raise Sent(name)

        return call
