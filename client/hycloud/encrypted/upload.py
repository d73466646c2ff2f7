"""Putting plaintext into an encrypted folder: chunk, seal, send only the chunks it lacks.

Order of writes: chunk objects first, then file manifests and name maps together (one bundle
where they fit: the cloud commits its members side by side), so a name never points at a chunk
not yet stored; maps and manifests name the versions they replace, so a writer beside this one
loses nothing (commit.py). `sync` also removes what is gone locally (its chunks stay until a
future collection; they are unreadable without the folder key).
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hycloud_core.crypto import chunking, chunks, manifest

from .commit import Pending, commit
from .folder import EncryptedFolder, ancestors, split
from .leases import Lease

FLUSH_BYTES = 32 * 1024 * 1024  # chunk objects held before they are sent


@dataclass
class PutResult:
    files: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks_sent: int = 0
    chunks_reused: int = 0
    bytes_sent: int = 0
    sent_paths: list[str] = field(default_factory=list)


@dataclass
class _Batch:
    folder: EncryptedFolder
    have: set[str]
    result: PutResult
    lease: Lease
    pending: dict[str, bytes] = field(default_factory=dict)
    size: int = 0

    def add(self, name: str, blob: bytes) -> None:
        if name in self.have:
            self.result.chunks_reused += 1
            self.lease.touch(name)  # a collection running now spares it
            return
        self.have.add(name)
        self.pending[chunks.object_path(name)] = blob
        self.size += len(blob)
        self.result.chunks_sent += 1
        if self.size >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        self.folder.store.write_many(self.pending)
        self.lease.write()  # fresh again, with the chunks reused so far
        self.result.bytes_sent += self.size
        self.pending, self.size = {}, 0


def local_files(local_dir: Path) -> list[tuple[Path, str]]:
    """Regular files under `local_dir` with their relative POSIX paths (symlinks left out)."""
    found = []
    for path in sorted(local_dir.rglob("*")):
        if path.is_file() and not path.is_symlink():
            found.append((path, path.relative_to(local_dir).as_posix()))
    return found


def put_tree(folder: EncryptedFolder, local_dir: Path, inner: str = "", delete: bool = False) -> PutResult:
    """The contents of `local_dir` into folder `inner`; unchanged files (same sha256) are skipped.
    With `delete` (sync), entries the local tree no longer has are removed."""
    pairs = [(path, posixpath.join(inner, rel) if inner else rel) for path, rel in local_files(local_dir)]
    inside = inner + "/" if inner else ""
    keep = (
        {inner} | {d for _, rel in pairs for d in ancestors(rel) if d.startswith(inside)} if delete else None
    )
    return put_files(folder, pairs, extra_dirs=[inner] if inner else [], keep_dirs=keep)


def put_files(
    folder: EncryptedFolder,
    pairs: list[tuple[Path, str]],
    extra_dirs: list[str] | None = None,
    keep_dirs: set[str] | None = None,
) -> PutResult:
    """Each local file to its plaintext path in the folder. `keep_dirs`: folders whose entries not
    among `pairs` (nor among these folders) are removed."""
    dirs = {d for _, rel in pairs for d in ancestors(rel)} | set(extra_dirs or [])
    dirs |= {d for extra in extra_dirs or [] for d in ancestors(extra)} | set(keep_dirs or ())
    maps = folder.read_maps(sorted(dirs))
    lease = Lease.start(folder.store)  # before the chunk listing: see leases.py
    try:
        return _put(folder, pairs, dirs, maps, keep_dirs, lease)
    finally:
        lease.end()


def _put(
    folder: EncryptedFolder,
    pairs: list[tuple[Path, str]],
    dirs: set[str],
    maps: dict[str, tuple[manifest.DirMap, int]],
    keep_dirs: set[str] | None,
    lease: Lease,
) -> PutResult:
    before = {rel: dict(dir_map.entries) for rel, (dir_map, _) in maps.items()}
    changed: set[str] = set()
    result = PutResult()
    batch = _Batch(folder, folder.store.chunk_names(), result, lease)
    bodies: dict[str, dict[str, Any]] = {}
    for local, rel in pairs:
        body = _seal_file(folder, batch, maps, local, rel)
        if body is None:
            result.unchanged += 1
            continue
        bodies[rel] = body
        changed.add(posixpath.dirname(rel))
        result.files += 1
        result.sent_paths.append(rel)
    changed |= _link_dirs(maps, dirs)
    if keep_dirs is not None:
        changed |= _remove_missing(folder, maps, keep_dirs, {rel for _, rel in pairs})
    batch.flush()
    changes = {rel: _edits(before[rel], maps[rel][0].entries) for rel in changed}
    replaced = {rel for rel in bodies if posixpath.basename(rel) in before[posixpath.dirname(rel)]}
    pending = Pending({rel: maps[rel] for rel in changed}, changes, bodies, replaced)
    result.bytes_sent += commit(folder, pending)
    return result


def _seal_file(
    folder: EncryptedFolder,
    batch: _Batch,
    maps: dict[str, tuple[manifest.DirMap, int]],
    local: Path,
    rel: str,
) -> dict[str, Any] | None:
    """One file's manifest body (its entry in `maps` set, with the manifest's counter), its new
    chunks handed to `batch`; None when the folder already holds exactly these bytes."""
    data = local.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    parent, name = posixpath.split(rel)
    dir_map = maps[parent][0]
    old = dir_map.entries.get(name)
    if old is not None and old["t"] == "file" and old.get("sha256") == digest:
        return None
    refs = []
    bounds = folder.header.chunking  # the folder's own: dedup needs every writer to cut alike
    for piece in chunking.chunks(data, bounds["min"], bounds["avg"], bounds["max"]):
        ref, blob = chunks.seal(folder.keys, piece)
        refs.append(ref)
        batch.add(ref.name, blob)
    stat = local.stat()
    body = manifest.FileManifest(len(data), digest, refs, stat.st_mtime, stat.st_mode & 0o7777)
    counter = (
        max(int(old.get("v", 0)) if old else 0, folder.counters.seen(folder.keys.folder_id, "F:" + rel)) + 1
    )
    dir_map.entries[name] = {
        "t": "file",
        "v": counter,
        "size": len(data),
        "sha256": digest,
        "mtime": stat.st_mtime,
    }
    return body.to_json()


def _edits(
    before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any] | None]:
    """The entries a put set (its own dicts, shared with the map) or removed (None)."""
    edits: dict[str, dict[str, Any] | None] = {n: e for n, e in after.items() if before.get(n) is not e}
    edits |= {n: None for n in before if n not in after}
    return edits


def _link_dirs(maps: dict[str, tuple[manifest.DirMap, int]], dirs: set[str]) -> set[str]:
    """Name each folder in its parent's map; the parents that changed."""
    changed = set()
    for rel in dirs:
        if not rel:
            continue
        parent, name = posixpath.split(rel)
        entries = maps[parent][0].entries
        if entries.get(name, {}).get("t") != "dir":
            entries[name] = {"t": "dir"}
            changed.add(parent)
    return changed


def _remove_missing(
    folder: EncryptedFolder, maps: dict[str, tuple[manifest.DirMap, int]], keep_dirs: set[str], kept: set[str]
) -> set[str]:
    """Entries of `keep_dirs` that neither a kept file nor a kept folder names: removed."""
    changed = set()
    for parent in keep_dirs:
        entries = maps[parent][0].entries
        for name in list(entries):
            rel = posixpath.join(parent, name) if parent else name
            if rel in kept or rel in keep_dirs:
                continue
            is_dir = entries[name]["t"] == "dir"
            if is_dir:
                folder.forget_maps(rel)
            folder.store.remove(folder.stored(rel), folder=is_dir)
            del entries[name]
            changed.add(parent)
    return changed


def put_file(folder: EncryptedFolder, local: Path, rel: str) -> PutResult:
    if not split(rel):
        raise ValueError("a file needs a name inside the encrypted folder")
    return put_files(folder, [(local, "/".join(split(rel)))])
