"""fsspec filesystem `hycloud://path`, so pandas, Dask, pyarrow and other fsspec users read and write
HyCloud files.

Credentials come from `storage_options` (`endpoint` and `key`, or `profile`), else from the client
configuration and environment like the CLI. Reads and writes are the SDK's file objects
(`HyCloud.open`): ranged reads, uploads on close.
"""

from __future__ import annotations

import os
from typing import Any

import fsspec
from fsspec.spec import AbstractFileSystem

from hycloud_core.errors import ConflictError, NotFoundError

from .config import ClientConfig
from .sdk import HyCloud

PROTOCOL = "hycloud"


def make_client(endpoint: str | None = None, key: str | None = None, profile: str | None = None) -> HyCloud:
    """An SDK client from explicit settings, else the configuration (the named profile, read as the
    CLI reads `HYCLOUD_PROFILE`) and environment."""
    if endpoint and key:
        return HyCloud(endpoint, key)
    cfg = _load_config(profile)
    return HyCloud(endpoint or cfg.endpoint, key or cfg.api_key)


def _load_config(profile: str | None) -> ClientConfig:
    if not profile:
        return ClientConfig.load()
    saved = os.environ.get("HYCLOUD_PROFILE")
    os.environ["HYCLOUD_PROFILE"] = profile
    try:
        return ClientConfig.load()
    finally:
        if saved is None:
            os.environ.pop("HYCLOUD_PROFILE", None)
        else:
            os.environ["HYCLOUD_PROFILE"] = saved


class HyCloudFileSystem(AbstractFileSystem):
    """A user's HyCloud namespace as an fsspec filesystem."""

    protocol = PROTOCOL
    root_marker = "/"

    def __init__(
        self, endpoint: str | None = None, key: str | None = None, profile: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.client = make_client(endpoint, key, profile)

    @classmethod
    def _strip_protocol(cls, path: str) -> str:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = str(path)
        if path.startswith(f"{PROTOCOL}://"):
            path = path[len(PROTOCOL) + 3 :]
        return "/" + path.strip("/")

    # --- metadata --------------------------------------------------------------------------------
    def _entry(self, info: dict) -> dict:
        kind = "directory" if info.get("type") == "dir" else "file"
        return {
            **info,
            "name": info["path"],
            "size": info.get("size", 0) if kind == "file" else 0,
            "type": kind,
        }

    def ls(self, path: str, detail: bool = True, **kwargs: Any):
        path = self._strip_protocol(path)
        try:
            info = self.client.stat(path)
        except NotFoundError:
            raise FileNotFoundError(path) from None
        entries = (
            [self._entry(e) for e in self.client.iter_dir(path)]
            if info["type"] == "dir"
            else [self._entry(info)]
        )
        return entries if detail else [e["name"] for e in entries]

    def info(self, path: str, **kwargs: Any) -> dict:
        path = self._strip_protocol(path)
        try:
            return self._entry(self.client.stat(path))
        except NotFoundError:
            raise FileNotFoundError(path) from None

    # --- changes --------------------------------------------------------------------------------
    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        """Refuses an existing path, as os.mkdir does (`makedirs(exist_ok=True)` does not)."""
        if self.exists(path):
            raise FileExistsError(path)
        self.client.mkdir(self._strip_protocol(path), parents=create_parents)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        try:
            self.client.mkdir(self._strip_protocol(path), parents=True)
        except ConflictError:
            if not (exist_ok and self.isdir(path)):
                raise FileExistsError(path) from None

    def rmdir(self, path: str) -> None:
        self.client.rmdir(self._strip_protocol(path))

    def rm_file(self, path: str) -> None:
        try:
            self.client.rm(self._strip_protocol(path))
        except NotFoundError:
            raise FileNotFoundError(path) from None

    def _rm(self, path: str) -> None:
        if self.isdir(path):
            self.client.rmdir(self._strip_protocol(path))
        else:
            self.rm_file(path)

    def rm(self, path, recursive: bool = False, maxdepth: int | None = None) -> None:
        for p in [path] if isinstance(path, str) else path:
            if recursive and self.isdir(p):
                self.client.rmdir(self._strip_protocol(p), recursive=True)
            else:
                self._rm(p)

    def mv(self, path1: str, path2: str, recursive: bool = False, maxdepth=None, **kwargs: Any) -> None:
        self.client.mv(self._strip_protocol(path1), self._strip_protocol(path2))

    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        self.client.cp(self._strip_protocol(path1), self._strip_protocol(path2))

    # --- content ---------------------------------------------------------------------------------
    def _open(
        self, path: str, mode: str = "rb", block_size: int | None = None, autocommit: bool = True, **kwargs
    ):
        if not autocommit:
            raise NotImplementedError("hycloud:// files are committed when closed")
        path = self._strip_protocol(path)
        if "w" in mode:
            return self.client.open(path, "wb", parents=True)
        try:
            return self.client.open(path, "rb", buffer_size=block_size or 4 * 1024 * 1024)
        except NotFoundError:
            raise FileNotFoundError(path) from None

    def put_file(self, lpath: str, rpath: str, callback=None, **kwargs: Any) -> None:
        if os.path.isdir(lpath):
            self.makedirs(rpath, exist_ok=True)
        else:
            self.client.put(lpath, self._strip_protocol(rpath), parents=True)

    def get_file(self, rpath: str, lpath: str, callback=None, outfile=None, **kwargs: Any) -> None:
        if self.isdir(rpath):
            os.makedirs(lpath, exist_ok=True)
        else:
            self.client.get(self._strip_protocol(rpath), lpath)

    def created(self, path: str):
        return self.modified(path)

    def modified(self, path: str):
        from datetime import UTC, datetime

        return datetime.fromtimestamp(self.info(path)["mtime"], UTC)


def register() -> None:
    """Make `hycloud://` known to fsspec even where entry points are not read."""
    if PROTOCOL not in fsspec.registry:
        fsspec.register_implementation(PROTOCOL, HyCloudFileSystem, clobber=False)


register()
