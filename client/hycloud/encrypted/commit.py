"""Committing a put's name maps and file manifests so that two writers at once lose nothing.

Every map and manifest is written naming the version it replaces (a bundle member's `expect`).
One that another writer changed meanwhile is refused, not overwritten: it is read again, this
put's own edits are applied to it (the entries it set or removed; a file's counter raised past
the other writer's, with its manifest sealed again), and it is sent again. The last writer of a
file wins, and its map entry and manifest agree; an entry another writer added is kept.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any

from hycloud_core.bundle import ABSENT
from hycloud_core.crypto import manifest
from hycloud_core.errors import ConflictError

from .folder import EncryptedFolder
from .store import version_of

TRIES = 8  # rounds of writing what was refused; each round means another writer committed


@dataclass
class Pending:
    """What one put changes: each touched folder's map with this put's entries in it, the entries
    it set (or removed: None) per folder, and each written file's manifest body."""

    maps: dict[str, tuple[manifest.DirMap, int]]
    changes: dict[str, dict[str, dict[str, Any] | None]]
    files: dict[str, dict[str, Any]]
    replaced: set[str] = field(default_factory=set)  # written files the maps already named

    def entry(self, rel: str) -> dict[str, Any]:
        parent, name = posixpath.split(rel)
        found = self.changes[parent][name]
        assert found is not None  # a written file's entry is set, never removed
        return found


def commit(folder: EncryptedFolder, pending: Pending) -> int:
    """Write the maps and manifests of `pending`; returns the bytes sent."""
    _read_versions(folder, pending)
    maps, files, sent = set(pending.maps), set(pending.files), 0
    for _ in range(TRIES):
        blobs, counts = _sealed(folder, pending, maps, files)
        expect = {path: folder.versions[path] for path in blobs if path in folder.versions}
        refused = folder.store.write_many(blobs, expect)
        sent += sum(len(b) for b in blobs.values())
        folder.versions.update({p: version_of(b) for p, b in blobs.items() if p not in refused})
        folder.counters.note(
            folder.keys.folder_id, {k: v for k, (p, v) in counts.items() if p not in refused}
        )
        if not refused:
            return sent
        maps, files = _merge(folder, pending, refused)
    raise ConflictError(
        "this folder kept changing under the write (other writers); run the same command again",
        code="version-mismatch",
    )


def _read_versions(folder: EncryptedFolder, pending: Pending) -> None:
    """The versions the manifests replace: read for files the maps named, absent for new names
    (a manifest left there by a writer that stopped before its map is refused, then read)."""
    paths = [folder.stored(rel) for rel in pending.files if rel in pending.replaced]
    folder.versions.update({p: version_of(b) for p, b in folder.store.read_many(paths).items()})
    folder.versions.update(
        {folder.stored(rel): ABSENT for rel in pending.files if rel not in pending.replaced}
    )


def _sealed(
    folder: EncryptedFolder, pending: Pending, maps: set[str], files: set[str]
) -> tuple[dict[str, bytes], dict[str, tuple[str, int]]]:
    """The stored bytes of the given maps and manifests, and each one's counter by counter key."""
    blobs: dict[str, bytes] = {}
    counts: dict[str, tuple[str, int]] = {}
    for rel in sorted(files):
        path, counter = folder.stored(rel), int(pending.entry(rel)["v"])
        blobs[path] = manifest.seal(folder.keys, manifest.FILE, rel, counter, pending.files[rel])
        counts["F:" + rel] = (path, counter)
    for rel in sorted(maps):
        path, new, blobs[path] = folder.sealed_map(rel, *pending.maps[rel])
        counts["D:" + rel] = (path, new)
    return blobs, counts


def _merge(folder: EncryptedFolder, pending: Pending, refused: set[str]) -> tuple[set[str], set[str]]:
    """Read again what was refused and apply this put's edits to it; what to write next."""
    dirs = {rel for rel in pending.maps if folder.map_path(rel) in refused}
    files = {rel for rel in pending.files if folder.stored(rel) in refused}
    for rel, (fresh, counter) in folder.read_maps(sorted(dirs)).items():
        for name, entry in pending.changes[rel].items():
            theirs = fresh.entries.pop(name, None)
            if entry is None:
                continue
            if entry["t"] == "file" and theirs and theirs.get("t") == "file":
                child = posixpath.join(rel, name) if rel else name
                files |= _raise_counter(entry, int(theirs.get("v", 0)), child)
            fresh.entries[name] = theirs if entry["t"] == "dir" and theirs else entry
        pending.maps[rel] = (fresh, counter)
    stored = folder.store.read_many(folder.stored(rel) for rel in files)
    for rel in files:
        blob = stored[folder.stored(rel)]
        folder.versions[folder.stored(rel)] = version_of(blob)
        if blob is not None:
            _raise_counter(pending.entry(rel), manifest.counter_of(blob), rel)
    return dirs | {posixpath.dirname(rel) for rel in files}, files


def _raise_counter(entry: dict[str, Any], theirs: int, rel: str) -> set[str]:
    """Put this put's version of a file past another writer's `theirs`; the file when it moved."""
    if int(entry["v"]) > theirs:
        return set()
    entry["v"] = theirs + 1
    return {rel}
