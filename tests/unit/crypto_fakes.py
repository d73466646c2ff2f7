"""What the fake stores of an encrypted folder share: its objects are the files of an in-memory
fake cloud (`cloud.files`, keyed by path) under `root`, as CloudStore keeps them through the SDK,
so the fake's listings and bundle requests see its header and ciphertext; and a file the SDK put
there, for the front-ends (mount, WebDAV) to read."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hycloud.encrypted import EncryptedFolder, upload
from hycloud_core.crypto.chunks import DIR as CHUNK_DIR

MARKER = b"KNOWN-PLAINTEXT-0123456789"  # plaintext the tests look for in what the cloud holds


class FilesStore:
    """Paths, chunk names and removal over `cloud.files`; each fake cloud keeps its bytes and its
    folders its own way (`read_many`, `write_many`, `listing`, `_forget_dirs`)."""

    def __init__(self, cloud: Any, root: str) -> None:
        self.cloud, self.root = cloud, root.rstrip("/")

    def _p(self, rel: str) -> str:
        return f"{self.root}/{rel}" if rel else self.root

    def chunk_names(self) -> set[str]:
        prefix = self._p(CHUNK_DIR) + "/"
        return {p[len(prefix) :] for p in self.cloud.files if p.startswith(prefix)}

    def remove(self, rel: str, folder: bool = False) -> None:
        target = self._p(rel)

        def gone(p: str) -> bool:
            return p == target or (folder and p.startswith(target + "/"))

        for p in [p for p in self.cloud.files if gone(p)]:
            del self.cloud.files[p]
        if folder:
            self._forget_dirs([d for d in self.cloud.dirs if gone(d)])

    def _forget_dirs(self, dirs: Iterable[str]) -> None:
        raise NotImplementedError


def put_through_sdk(folder: EncryptedFolder, local: Path, rel: str, size: int) -> bytes:
    """Seal `size` random bytes and MARKER into `rel` by the SDK's encrypted upload (from `local`),
    for a front-end to read back; those bytes."""
    local.write_bytes(os.urandom(size) + MARKER)
    upload.put_file(folder, local, rel)
    return local.read_bytes()
