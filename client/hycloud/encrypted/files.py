"""Single-file work inside an open encrypted folder, for callers that hold bytes rather than local
trees (the fsspec filesystem): read a file's plaintext, write bytes, make a folder, remove.

Writes go through upload.put_files (chunks sealed here, maps committed naming the versions they
replace); a removal drops the name from its parent's map first and only then the stored objects,
so a name never points at a manifest that is gone.
"""

from __future__ import annotations

import posixpath
import tempfile
from pathlib import Path
from typing import Any

from hycloud_core.crypto import manifest
from hycloud_core.errors import ConflictError, NotFoundError

from . import download, upload
from .commit import Pending, commit
from .folder import EncryptedFolder, split


def norm(rel: str) -> str:
    return "/".join(split(rel))


def entry_or_missing(folder: EncryptedFolder, rel: str) -> dict[str, Any]:
    found = folder.entry(norm(rel))
    if found is None:
        raise NotFoundError(f"{rel} is not in this encrypted folder")
    return found


def read_bytes(folder: EncryptedFolder, rel: str) -> bytes:
    """A file's plaintext, checked against its manifest (download.fetch) before it is returned."""
    rel = norm(rel)
    found = entry_or_missing(folder, rel)
    if found["t"] != "file":
        raise ConflictError(f"{rel} is a folder", code="is-a-directory")
    with tempfile.TemporaryDirectory(prefix="hycloud-enc-") as tmp:
        local = Path(tmp) / "file"
        download.fetch(folder, [download.Wanted(rel, local, int(found["v"]))])
        return local.read_bytes()


def fetch_many(folder: EncryptedFolder, files: list[tuple[str, Path]]) -> None:
    """Files (path inside, local path) written locally, their parents' maps read once."""
    parents = sorted({posixpath.dirname(norm(rel)) for rel, _ in files})
    maps = folder.read_maps(parents)
    wanted = []
    for rel, local in files:
        parent, name = posixpath.split(norm(rel))
        found = maps[parent][0].entries.get(name)
        if found is None or found["t"] != "file":
            raise NotFoundError(f"{rel} is not a file of this encrypted folder")
        local.parent.mkdir(parents=True, exist_ok=True)
        wanted.append(download.Wanted(norm(rel), local, int(found["v"])))
    download.fetch(folder, wanted)


def write_bytes(folder: EncryptedFolder, rel: str, data: bytes) -> upload.PutResult:
    with tempfile.TemporaryDirectory(prefix="hycloud-enc-") as tmp:
        local = Path(tmp) / "file"
        local.write_bytes(data)
        return upload.put_file(folder, local, norm(rel))


def make_dir(folder: EncryptedFolder, rel: str) -> None:
    """A folder (and those above it) inside; one that is there already is left as it is."""
    if norm(rel):
        found = folder.entry(norm(rel))
        if found is not None and found["t"] != "dir":
            raise ConflictError(f"{rel} is a file", code="already-exists")
        upload.put_files(folder, [], extra_dirs=[norm(rel)])


def remove(folder: EncryptedFolder, rel: str, recursive: bool = False) -> None:
    """A file, or a folder (empty, or anything with `recursive`), out of its parent's map, then
    its stored objects (their chunks stay until a collection: unreadable without the key)."""
    rel = norm(rel)
    if not rel:
        raise ConflictError("the encrypted folder itself is removed with a plain rmdir", code="bad-request")
    parent, name = posixpath.split(rel)
    maps = folder.read_maps([parent])
    dir_map, _ = maps[parent]
    found = dir_map.entries.get(name)
    if found is None:
        raise NotFoundError(f"{rel} is not in this encrypted folder")
    is_dir = found["t"] == "dir"
    if is_dir and not recursive and folder.ls(rel):
        raise ConflictError(f"{rel} is not empty", code="not-empty")
    edited = manifest.DirMap(dict(dir_map.entries))
    del edited.entries[name]
    commit(folder, Pending({parent: (edited, maps[parent][1])}, {parent: {name: None}}, {}))
    if is_dir:
        folder.forget_maps(rel)
    folder.store.remove(folder.stored(rel), folder=is_dir)
