"""Getting plaintext out of an encrypted folder: every object checked before a byte is written.

Name maps are read a level at a time, then manifests, then chunks in batches of about 16 MiB;
each file is assembled in memory, its sha256 checked against its manifest, and only then
written (atomically). Anything altered, swapped, cut or rolled back raises, never returns data.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from dataclasses import dataclass
from pathlib import Path

from hycloud_core.atomic import atomic_write
from hycloud_core.crypto import chunks, manifest
from hycloud_core.crypto.errors import IntegrityError, RollbackError
from hycloud_core.errors import NotFoundError

from .folder import EncryptedFolder, split

BATCH_CHUNKS = 256


@dataclass(frozen=True)
class Wanted:
    rel: str
    local: Path
    version: int


def walk(folder: EncryptedFolder, inner: str = "") -> list[tuple[str, dict]]:
    """Every file under folder `inner` (plaintext path, its name map entry), folder by folder."""
    files, level = [], [inner]
    while level:
        maps = folder.read_maps(level)
        level = []
        for parent, (dir_map, _) in maps.items():
            for name, entry in sorted(dir_map.entries.items()):
                rel = posixpath.join(parent, name) if parent else name
                (files.append((rel, entry)) if entry["t"] == "file" else level.append(rel))
    return files


def get(folder: EncryptedFolder, inner: str, local: Path) -> int:
    """A file (to `local`) or a folder's tree (into `local`); returns the files written."""
    rel = "/".join(split(inner))
    entry = folder.entry(rel)
    if entry is None:
        raise NotFoundError(f"{rel} is not in this encrypted folder")
    if entry["t"] == "file":
        fetch(folder, [Wanted(rel, local, int(entry["v"]))])
        return 1
    wanted = [Wanted(r, local / (r[len(rel) + 1 :] if rel else r), int(e["v"])) for r, e in walk(folder, rel)]
    local.mkdir(parents=True, exist_ok=True)
    for start in range(0, len(wanted), 500):
        fetch(folder, wanted[start : start + 500])
    return len(wanted)


def fetch(folder: EncryptedFolder, files: list[Wanted]) -> None:
    """Read and check the files' manifests, then their chunks in batches, and write them."""
    blobs = folder.store.read_many(folder.stored(f.rel) for f in files)
    opened = [(f, opened_manifest(folder, f, blobs[folder.stored(f.rel)])) for f in files]
    group: list[tuple[Wanted, manifest.FileManifest]] = []
    for item in opened:
        group.append(item)
        if sum(len(m.chunks) for _, m in group) >= BATCH_CHUNKS:
            _assemble(folder, group)
            group = []
    if group:
        _assemble(folder, group)


def opened_manifest(folder: EncryptedFolder, file: Wanted, blob: bytes | None) -> manifest.FileManifest:
    if blob is None:
        raise IntegrityError(f"{file.rel}: its manifest is missing though its folder names it")
    key = "F:" + file.rel
    seen = max(file.version, folder.counters.seen(folder.keys.folder_id, key))
    try:
        opened = manifest.open_(folder.keys, manifest.FILE, file.rel, blob, seen)
    except RollbackError as err:
        raise RollbackError(f"{file.rel}: {err.message}") from err
    folder.counters.note(folder.keys.folder_id, {key: opened.counter})
    return manifest.FileManifest.from_json(opened.body)


def _assemble(folder: EncryptedFolder, group: list[tuple[Wanted, manifest.FileManifest]]) -> None:
    names = {ref.name for _, m in group for ref in m.chunks}
    got = folder.store.read_many(chunks.object_path(n) for n in sorted(names))
    for file, body in group:
        parts = []
        for ref in body.chunks:
            blob = got[chunks.object_path(ref.name)]
            if blob is None:
                raise IntegrityError(f"{file.rel}: chunk {ref.name[:16]}… is missing")
            parts.append(chunks.open_(folder.keys, ref, blob))
        data = b"".join(parts)
        if hashlib.sha256(data).hexdigest() != body.sha256:
            raise IntegrityError(f"{file.rel}: the assembled file does not match its manifest")
        file.local.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(file.local, data)
        if body.mode is not None:
            os.chmod(file.local, body.mode & 0o777)
        if body.mtime is not None:
            os.utime(file.local, (body.mtime, body.mtime))
