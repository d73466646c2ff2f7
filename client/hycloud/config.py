"""Client settings: where the API is and which key to use, in named profiles.

Stored as JSON at $HYCLOUD_CONFIG (default ~/.config/hycloud/config.json), one section per
profile: `{"profiles": {"default": {"endpoint": ..., "api_key": ...}, "work": {...}}}`. A file
in the older flat form (`{"endpoint", "api_key"}`) reads as the `default` profile. The profile is
`--profile NAME`, else $HYCLOUD_PROFILE, else `default`; HYCLOUD_ENDPOINT and HYCLOUD_API_KEY
override the file, which suits CI and scripts; HYCLOUD_STANDBY_URL (or `standby` in the profile)
names the standby controller the client fails over to (docs/FAILOVER.md).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from hycloud_core.errors import HyCloudError

DEFAULT_PROFILE = "default"


def config_path() -> Path:
    default = Path.home() / ".config" / "hycloud" / "config.json"
    return Path(os.environ.get("HYCLOUD_CONFIG", default))


def profile_name(explicit: str | None = None) -> str:
    """The profile in force: the explicit one, else $HYCLOUD_PROFILE, else `default`."""
    return explicit or os.environ.get("HYCLOUD_PROFILE") or DEFAULT_PROFILE


@dataclass
class ClientConfig:
    endpoint: str
    api_key: str
    standby: str | None = None  # the standby controller's URL (docs/FAILOVER.md)

    @classmethod
    def load(cls, profile: str | None = None) -> ClientConfig:
        path, name = config_path(), profile_name(profile)
        section = read_profiles(path).get(name, {})
        endpoint = os.environ.get("HYCLOUD_ENDPOINT") or section.get("endpoint")
        api_key = os.environ.get("HYCLOUD_API_KEY") or section.get("api_key")
        if not endpoint or not api_key:
            raise HyCloudError(
                f"not configured: run `hycloud configure` (or set HYCLOUD_ENDPOINT and HYCLOUD_API_KEY); "
                f"looked for profile '{name}' in {path}",
                code="not-configured",
                status=400,
            )
        standby = os.environ.get("HYCLOUD_STANDBY_URL") or section.get("standby")
        return cls(endpoint=endpoint, api_key=api_key, standby=standby or None)

    def save(self, profile: str | None = None) -> Path:
        """Write this profile's section, keeping the others; the file is readable by its owner only."""
        path = config_path()
        profiles = read_profiles(path)
        profiles[profile_name(profile)] = {k: v for k, v in asdict(self).items() if v is not None}
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.touch(mode=0o600)
        tmp.chmod(0o600)
        tmp.write_text(json.dumps({"profiles": profiles}, indent=2))
        tmp.replace(path)
        return path


def read_profiles(path: Path) -> dict[str, dict]:
    """Every profile section in the file (none when there is no file)."""
    if not path.exists():
        return {}
    data = _read_json(path, "bad-config")
    if "profiles" not in data:
        return {DEFAULT_PROFILE: data} if data else {}
    profiles = data["profiles"]
    if not isinstance(profiles, dict) or not all(isinstance(v, dict) for v in profiles.values()):
        raise HyCloudError(f"{path}: 'profiles' must map names to objects", code="bad-config", status=400)
    return profiles


def endpoint_from_outputs(outputs_file: Path) -> str:
    """The API URL from a `cdk deploy --outputs-file` JSON (first stack that has one)."""
    data = _read_json(Path(outputs_file), "bad-outputs")
    for outputs in data.values():
        if not isinstance(outputs, dict):
            continue
        if "LocalApiUrl" in outputs:
            return outputs["LocalApiUrl"]
        if "ApiUrl" in outputs:
            return outputs["ApiUrl"]
    raise HyCloudError(f"no ApiUrl output in {outputs_file}", code="bad-outputs", status=400)


def _read_json(path: Path, code: str) -> dict:
    """A JSON object from a file; a file that is not one is a one-line error naming it."""
    try:
        data = json.loads(path.read_text())
    except ValueError as err:
        raise HyCloudError(f"{path} is not valid JSON: {err}", code=code, status=400) from None
    if not isinstance(data, dict):
        raise HyCloudError(f"{path} does not hold a JSON object", code=code, status=400)
    return data
