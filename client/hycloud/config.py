"""Client settings: where the API is and which key to use.

Stored as JSON at $HYCLOUD_CONFIG (default ~/.config/hycloud/config.json); the environment
variables HYCLOUD_ENDPOINT and HYCLOUD_API_KEY override the file, which suits CI and scripts.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from hycloud_core.errors import HyCloudError


def config_path() -> Path:
    default = Path.home() / ".config" / "hycloud" / "config.json"
    return Path(os.environ.get("HYCLOUD_CONFIG", default))


@dataclass
class ClientConfig:
    endpoint: str
    api_key: str

    @classmethod
    def load(cls) -> ClientConfig:
        path = config_path()
        data = _read_json(path, "bad-config") if path.exists() else {}
        endpoint = os.environ.get("HYCLOUD_ENDPOINT") or data.get("endpoint")
        api_key = os.environ.get("HYCLOUD_API_KEY") or data.get("api_key")
        if not endpoint or not api_key:
            raise HyCloudError(
                f"not configured: run `hycloud configure` (or set HYCLOUD_ENDPOINT and HYCLOUD_API_KEY); "
                f"looked in {path}",
                code="not-configured",
                status=400,
            )
        return cls(endpoint=endpoint, api_key=api_key)

    def save(self) -> Path:
        path = config_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=2))
        path.chmod(0o600)
        return path


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
