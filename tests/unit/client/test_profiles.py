"""Named profiles: sections of one config file, chosen by --profile or $HYCLOUD_PROFILE."""

from __future__ import annotations

import json

import pytest

from hycloud.config import ClientConfig
from hycloud_core.errors import HyCloudError


@pytest.fixture
def config(tmp_path, monkeypatch):
    path = tmp_path / "config.json"
    monkeypatch.setenv("HYCLOUD_CONFIG", str(path))
    for var in ("HYCLOUD_PROFILE", "HYCLOUD_ENDPOINT", "HYCLOUD_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return path


def test_saving_a_profile_keeps_the_others_and_the_file_private(config):
    ClientConfig("https://a", "ka").save()
    ClientConfig("https://b", "kb").save("work")
    assert json.loads(config.read_text())["profiles"] == {
        "default": {"endpoint": "https://a", "api_key": "ka"},
        "work": {"endpoint": "https://b", "api_key": "kb"},
    }
    assert config.stat().st_mode & 0o777 == 0o600
    assert ClientConfig.load("work").api_key == "kb"
    assert ClientConfig.load().api_key == "ka"


def test_the_environment_picks_the_profile(config, monkeypatch):
    ClientConfig("https://b", "kb").save("work")
    monkeypatch.setenv("HYCLOUD_PROFILE", "work")
    assert ClientConfig.load().endpoint == "https://b"


def test_an_older_flat_file_is_the_default_profile(config):
    config.write_text(json.dumps({"endpoint": "https://old", "api_key": "k"}))
    assert ClientConfig.load() == ClientConfig("https://old", "k")
    ClientConfig("https://b", "kb").save("work")
    assert ClientConfig.load().endpoint == "https://old"


def test_a_missing_profile_says_which(config):
    ClientConfig("https://a", "ka").save()
    with pytest.raises(HyCloudError, match="profile 'nope'") as err:
        ClientConfig.load("nope")
    assert err.value.code == "not-configured"
