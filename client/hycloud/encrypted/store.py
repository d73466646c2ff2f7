"""Where an encrypted folder's objects live: paths relative to the folder's root, bytes only.

`CloudStore` uses the SDK (small objects many to a request with the bundle upload and download);
`MemoryStore` is the same contract in a dict, for tests and benches (it counts bytes sent).
A write may name, per object, the version it replaces (`version_of` what was read, or absent):
an object that holds another is not written and comes back among the refused.
"""

from __future__ import annotations

import posixpath
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from hycloud_core import content
from hycloud_core.bundle import ABSENT
from hycloud_core.crypto.chunks import DIR as CHUNK_DIR
from hycloud_core.errors import NotFoundError

if TYPE_CHECKING:
    from ..sdk.client import HyCloud


def version_of(blob: bytes | None) -> str:
    """The version a later write names to replace `blob`: its content hash, or absent."""
    return ABSENT if blob is None else content.hash_bytes(blob)


class Store(Protocol):
    def read_many(self, rels: Iterable[str]) -> dict[str, bytes | None]: ...
    def write_many(self, blobs: Mapping[str, bytes], expect: Mapping[str, str] | None = None) -> set[str]: ...
    def chunk_names(self) -> set[str]: ...
    def remove(self, rel: str, folder: bool = False) -> None: ...
    def listing(self, rel: str) -> dict[str, float]: ...


class MemoryStore:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.objects: dict[str, bytes] = {}
        self.mtimes: dict[str, float] = {}  # when each object was last written, by `clock`
        self.clock = clock
        self.sent = 0  # bytes written, as a transfer would send them

    def read_many(self, rels: Iterable[str]) -> dict[str, bytes | None]:
        return {rel: self.objects.get(rel) for rel in rels}

    def write_many(self, blobs: Mapping[str, bytes], expect: Mapping[str, str] | None = None) -> set[str]:
        expect = expect or {}
        refused = {rel for rel in blobs if rel in expect and version_of(self.objects.get(rel)) != expect[rel]}
        self.objects.update({rel: blob for rel, blob in blobs.items() if rel not in refused})
        self.mtimes.update({rel: self.clock() for rel in blobs if rel not in refused})
        self.sent += sum(len(b) for b in blobs.values())
        return refused

    def chunk_names(self) -> set[str]:
        prefix = CHUNK_DIR + "/"
        return {rel[len(prefix) :] for rel in self.objects if rel.startswith(prefix)}

    def remove(self, rel: str, folder: bool = False) -> None:
        for key in [k for k in self.objects if k == rel or (folder and k.startswith(rel + "/"))]:
            del self.objects[key]
            self.mtimes.pop(key, None)

    def listing(self, rel: str) -> dict[str, float]:
        """The files directly in folder `rel` and when each was written."""
        prefix = rel.rstrip("/") + "/"
        return {
            k[len(prefix) :]: self.mtimes.get(k, 0.0)
            for k in self.objects
            if k.startswith(prefix) and "/" not in k[len(prefix) :]
        }


class CloudStore:
    """The folder `root` on the cloud, through the SDK."""

    def __init__(self, client: HyCloud, root: str) -> None:
        self.client, self.root = client, root.rstrip("/") or "/"
        self.sent = 0

    def _remote(self, rel: str) -> str:
        return posixpath.join(self.root, rel) if rel else self.root

    def read_many(self, rels: Iterable[str]) -> dict[str, bytes | None]:
        from ..sdk.bundles import get_files, raise_first_error

        wanted = list(dict.fromkeys(rels))
        if not wanted:
            return {}
        with tempfile.TemporaryDirectory(prefix="hycloud-enc-") as folder:
            pairs = [(self._remote(rel), Path(folder) / str(i)) for i, rel in enumerate(wanted)]
            results = get_files(self.client, pairs)
            raise_first_error(
                [r for r in results if r.get("status") == "error" and r.get("http_status") != 404]
            )
            return {
                rel: (local.read_bytes() if result.get("status") == "ok" else None)
                for rel, (_, local), result in zip(wanted, pairs, results, strict=True)
            }

    def write_many(self, blobs: Mapping[str, bytes], expect: Mapping[str, str] | None = None) -> set[str]:
        from ..sdk.bundles import put_files, raise_first_error

        if not blobs:
            return set()
        wanted = {self._remote(rel): version for rel, version in (expect or {}).items() if rel in blobs}
        with tempfile.TemporaryDirectory(prefix="hycloud-enc-") as folder:
            pairs = []
            for i, (rel, data) in enumerate(blobs.items()):
                local = Path(folder) / str(i)
                local.write_bytes(data)
                pairs.append((local, self._remote(rel)))
            results = put_files(self.client, pairs, expect=wanted)
        mismatch = [r.get("code") == "version-mismatch" for r in results]
        raise_first_error([r for r, refused in zip(results, mismatch, strict=True) if not refused])
        self.sent += sum(len(b) for b in blobs.values())
        return {rel for rel, refused in zip(blobs, mismatch, strict=True) if refused}

    def chunk_names(self) -> set[str]:
        try:
            return {
                e["name"] for e in self.client.iter_dir(self._remote(CHUNK_DIR)) if e.get("type") != "dir"
            }
        except NotFoundError:
            return set()

    def listing(self, rel: str) -> dict[str, float]:
        try:
            entries = self.client.iter_dir(self._remote(rel))
            return {e["name"]: float(e["mtime"]) for e in entries if e.get("type") != "dir"}
        except NotFoundError:
            return {}

    def remove(self, rel: str, folder: bool = False) -> None:
        try:
            if folder:
                self.client.rmdir(self._remote(rel), recursive=True)
            else:
                self.client.rm(self._remote(rel))
        except NotFoundError:
            pass
