"""HyCloud SDK: the filesystem operations, each one call on the REST API (large files straight to S3)."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from hycloud_core import paths
from hycloud_core.constants import MiB
from hycloud_core.errors import HyCloudError, PayloadTooLargeError

from ..config import ClientConfig
from ..http import Http
from ..transfer import Progress, download_large, download_relay, upload_large
from ..transfer.delta import delta_download, delta_upload
from ..verify import check_stored
from . import tree_jobs
from .files import open_remote

OCTET = "application/octet-stream"
LINK_TYPE = "application/vnd.hycloud.link+json"


class HyCloud:
    def __init__(self, endpoint: str, api_key: str, timeout: float = 60.0) -> None:
        self.http = Http(endpoint, api_key, timeout)
        self._threshold: int | None = None
        self.upload_rate = 50e6 / 8  # bytes/s until measured: the paper's 50 Mbit/s client link
        self.last_transfer: dict = {}

    @classmethod
    def from_config(cls) -> HyCloud:
        cfg = ClientConfig.load()
        return cls(cfg.endpoint, cfg.api_key)

    # --- metadata ------------------------------------------------------------------------------
    def info(self) -> dict:
        info = self.http.json("GET", "/v1/whoami")
        self._threshold = info["small_file_threshold"]
        return info

    def whoami(self) -> str:
        return self.info()["user"]

    @property
    def small_file_threshold(self) -> int:
        return (
            self._threshold
            if self._threshold is not None
            else self.info().get("small_file_threshold", 2 * MiB)
        )

    def stat(self, path: str) -> dict:
        return self.http.json("GET", "/v1/stat", params={"path": paths.normalize(path)})

    def ls(self, path: str = "/", page_size: int = 1000) -> list[dict]:
        return list(self.iter_dir(path, page_size))

    def iter_dir(self, path: str = "/", page_size: int = 1000) -> Iterator[dict]:
        cursor = None
        while True:
            params = {
                "path": paths.normalize(path),
                "limit": page_size,
                **({"cursor": cursor} if cursor else {}),
            }
            page = self.http.json("GET", "/v1/dirs", params=params)
            yield from page["entries"]
            cursor = page.get("cursor")
            if not cursor:
                return

    # --- directories and namespace changes ---------------------------------------------------------
    def mkdir(self, path: str, parents: bool = False) -> dict:
        return self.http.json("POST", "/v1/dirs", json={"path": paths.normalize(path), "parents": parents})

    def rmdir(self, path: str, recursive: bool = False, progress: Progress | None = None) -> dict:
        """Remove a folder; with `recursive`, a large tree is removed by a job this call follows."""
        response = self.http.request(
            "DELETE", "/v1/dirs", params={"path": paths.normalize(path), "recursive": str(recursive).lower()}
        )
        if response.status_code == 202:
            job = tree_jobs.follow(self.http, response.json(), progress)
            return {"removed": job["src"], "files": job["done"]}
        return response.json()

    def rm(self, path: str) -> dict:
        return self.http.json("DELETE", "/v1/files", params={"path": paths.normalize(path)})

    def mv(self, src: str, dst: str, progress: Progress | None = None) -> dict:
        return self._tree_op("/v1/move", src, dst, progress)

    def cp(self, src: str, dst: str, progress: Progress | None = None) -> dict:
        return self._tree_op("/v1/copy", src, dst, progress)

    def _tree_op(self, route: str, src: str, dst: str, progress: Progress | None) -> dict:
        """Move or copy; a large tree is handled by a job this call follows to its end."""
        body = {"src": paths.normalize(src), "dst": paths.normalize(dst)}
        response = self.http.request("POST", route, json=body)
        if response.status_code == 202:
            tree_jobs.follow(self.http, response.json(), progress)
            return self.stat(dst)
        return response.json()

    # --- file transfer -------------------------------------------------------------------------
    def put_bytes(self, path: str, data: bytes, parents: bool = False) -> dict:
        """Store a small file; fails unless the server reports storing exactly these bytes."""
        digest = hashlib.sha256(data).hexdigest()
        entry = self.http.json(
            "PUT",
            "/v1/files",
            params={"path": paths.normalize(path), "parents": str(parents).lower()},
            data=data,
            headers={"Content-Type": OCTET, "x-hycloud-sha256": digest},
        )
        check_stored(path, entry.get("sha256"), digest)
        return entry

    def put(
        self,
        local: str | Path,
        remote: str,
        parents: bool = False,
        progress: Progress | None = None,
        base: str | Path | None = None,
        delta_kind: str = "version",
        upload_rate: float | None = None,
        force_delta: bool = False,
    ) -> dict:
        """Upload a file: small ones through the API to EFS, large ones straight to S3, or as a
        delta against `base` (a local copy of a version the cloud has) when eq. 2 says it pays."""
        local = Path(local)
        size = os.path.getsize(local)
        if base is not None and size > self.small_file_threshold:
            result = delta_upload(
                self.http,
                local,
                paths.normalize(remote),
                Path(base),
                upload_rate or self.upload_rate,
                delta_kind,
                progress,
                force=force_delta,
            )
            if result is not None:
                return result
        if size <= self.small_file_threshold:
            try:
                return self.put_bytes(remote, local.read_bytes(), parents=parents)
            except PayloadTooLargeError:
                pass  # the deployment's threshold is lower than we thought
        started = time.perf_counter()
        result = upload_large(self.http, local, paths.normalize(remote), parents=parents, progress=progress)
        if result.get("sent_bytes", 0) > 4 * MiB:  # measured upload rate for eq. 2
            self.upload_rate = result["sent_bytes"] / max(time.perf_counter() - started, 1e-6)
        return result

    def open(self, path: str, mode: str = "rb", **kwargs):
        """A file object: seekable ranged reads ("rb"), or written locally and uploaded on close ("wb")."""
        return open_remote(self, path, mode, **kwargs)

    def _fetch(self, path: str):
        return self.http.request(
            "GET",
            "/v1/files",
            params={"path": paths.normalize(path)},
            headers={"Accept": f"{OCTET}, {LINK_TYPE}"},
        )

    def get_bytes(self, path: str) -> bytes:
        response = self._fetch(path)
        if response.headers.get("Content-Type", "").startswith(LINK_TYPE):
            raise HyCloudError(
                f"{path} is a large file; download it with get()", code="large-file", status=400
            )
        return _verified(path, response)

    def get(
        self,
        remote: str,
        local: str | Path,
        progress: Progress | None = None,
        via: str = "direct",
        base: str | Path | None = None,
        delta_mode: str = "auto",
    ) -> Path:
        """Download a file to `local`, replacing it only once the content verified.

        Large files come straight from S3 (`via="direct"`), through the EFS relay (`via="relay"`),
        or as a delta against an older local version (`base`; with `via="delta"` the existing
        `local` file is the base).
        """
        local = Path(local)
        response = self._fetch(remote)
        if response.headers.get("Content-Type", "").startswith(LINK_TYPE):
            info = response.json()
            if via == "delta" and base is None and local.exists():
                base = local
            if base is not None:
                result = delta_download(self.http, info, Path(base), local, progress, mode=delta_mode)
                if result is not None:
                    self.last_transfer = result
                    return local
                self.last_transfer = {"kind": "full"}  # no checksum list fits one request
            if via == "relay":
                return download_relay(self.http, paths.normalize(remote), local, progress)
            return download_large(info, local, progress)
        tmp = local.with_name(local.name + ".hycloud-part")
        try:
            tmp.write_bytes(_verified(remote, response))
            tmp.replace(local)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return local


def _verified(path: str, response) -> bytes:
    data = response.content
    expected = response.headers.get("x-hycloud-sha256")
    if expected and hashlib.sha256(data).hexdigest() != expected:
        raise HyCloudError(f"download of {path} is corrupt (sha256 mismatch)", code="corrupt-download")
    return data
