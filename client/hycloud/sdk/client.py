"""HyCloud SDK: the filesystem operations, each one call on the REST API."""

from __future__ import annotations

import hashlib
from pathlib import Path

from hycloud_core import paths
from hycloud_core.errors import HyCloudError

from ..config import ClientConfig
from .http import Http

OCTET = "application/octet-stream"


class HyCloud:
    def __init__(self, endpoint: str, api_key: str, timeout: float = 60.0) -> None:
        self.http = Http(endpoint, api_key, timeout)

    @classmethod
    def from_config(cls) -> HyCloud:
        cfg = ClientConfig.load()
        return cls(cfg.endpoint, cfg.api_key)

    def whoami(self) -> str:
        return self.http.json("GET", "/v1/whoami")["user"]

    def mkdir(self, path: str, parents: bool = False) -> dict:
        return self.http.json("POST", "/v1/dirs", json={"path": paths.normalize(path), "parents": parents})

    def ls(self, path: str = "/") -> list[dict]:
        return self.http.json("GET", "/v1/dirs", params={"path": paths.normalize(path)})["entries"]

    def stat(self, path: str) -> dict:
        return self.http.json("GET", "/v1/stat", params={"path": paths.normalize(path)})

    def put_bytes(self, path: str, data: bytes, parents: bool = False) -> dict:
        digest = hashlib.sha256(data).hexdigest()
        return self.http.json(
            "PUT",
            "/v1/files",
            params={"path": paths.normalize(path), "parents": str(parents).lower()},
            data=data,
            headers={"Content-Type": OCTET, "x-hycloud-sha256": digest},
        )

    def get_bytes(self, path: str) -> bytes:
        response = self.http.request(
            "GET", "/v1/files", params={"path": paths.normalize(path)}, headers={"Accept": OCTET}
        )
        data = response.content
        expected = response.headers.get("x-hycloud-sha256")
        if expected and hashlib.sha256(data).hexdigest() != expected:
            raise HyCloudError(f"download of {path} is corrupt (sha256 mismatch)", code="corrupt-download")
        return data

    def put(self, local: str | Path, remote: str, parents: bool = False) -> dict:
        return self.put_bytes(remote, Path(local).read_bytes(), parents=parents)

    def get(self, remote: str, local: str | Path) -> Path:
        local = Path(local)
        tmp = local.with_name(local.name + ".hycloud-part")
        tmp.write_bytes(self.get_bytes(remote))
        tmp.replace(local)
        return local
