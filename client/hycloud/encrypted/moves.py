"""Copies and moves inside one encrypted folder, without moving a byte of content.

A chunk's key comes from its plaintext and the folder key, and its object is named by its
ciphertext hash, so every file of one folder can name the same chunk objects: a copy reads the
source's manifests (each authenticated, as a download does), seals them again for the new
plaintext path (a manifest's MAC binds it to its path) with a fresh counter, and commits them with
the changed name maps through the same path a put takes (commit.py: maps written naming the
versions they replace). No chunk is read or sent. A move is that copy, then the source's removal
from its parent's map (files.remove), so a move cut short leaves both names, never neither.

Across two folder keys (another encrypted folder, or plain storage) nothing can be reused: the
callers decrypt and seal again through this machine (the CLI's cp/mv, the mount, WebDAV).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hycloud_core.errors import BadRequestError, ConflictError

from . import files
from .commit import Pending, commit
from .download import Wanted, opened_manifest
from .folder import EncryptedFolder, ancestors
from .leases import Lease
from .upload import _edits


@dataclass
class Copied:
    files: int = 0
    folders: int = 0
    chunks_reused: int = 0
    bytes_sent: int = 0  # manifests and name maps only


def copy(folder: EncryptedFolder, src: str, dst: str, replace_dir: bool = False) -> Copied:
    """Plaintext path `src` (a file or a folder's tree) to `dst` inside the same folder. A file
    replaces a file at `dst`; a folder needs `dst` absent (or, with `replace_dir`, an empty
    folder: POSIX rename). The folders above `dst` are made."""
    src, dst = files.norm(src), files.norm(dst)
    found = _check(folder, src, dst, replace_dir)
    tree = _tree(folder, src, found)
    bodies = _bodies(folder, src, tree)
    chunk_names = {ref[0] for body in bodies.values() for ref in body["chunks"]}  # ChunkRef.to_json
    lease = Lease.start(folder.store)  # a collection running now spares the chunks named again
    try:
        for name in chunk_names:
            lease.touch(name)
        lease.write()
        sent = _commit(folder, src, dst, tree, bodies)
    finally:
        lease.end()
    dirs = sum(1 for _, entry in tree if entry["t"] == "dir")
    return Copied(len(tree) - dirs, dirs, len(chunk_names), sent)


def move(folder: EncryptedFolder, src: str, dst: str, replace_dir: bool = False) -> Copied:
    """`copy`, then `src` out of its parent's map and its stored objects removed."""
    done = copy(folder, src, dst, replace_dir)
    files.remove(folder, src, recursive=True)
    return done


def _check(folder: EncryptedFolder, src: str, dst: str, replace_dir: bool) -> dict[str, Any]:
    """The source's entry; refusals for what a copy cannot do."""
    if not src:
        raise BadRequestError("the encrypted folder itself is copied or moved with plain cp/mv")
    if not dst:
        raise ConflictError("the encrypted folder's root is a folder", code="already-exists")
    found = files.entry_or_missing(folder, src)
    if dst == src or dst.startswith(src + "/"):
        raise BadRequestError(f"cannot copy {src} into itself ({dst})", code="bad-request")
    there = folder.entry(dst)
    if there is not None and found["t"] == "dir":
        if there["t"] != "dir" or not replace_dir or folder.ls(dst):
            raise ConflictError(f"{dst} already exists", code="already-exists")
    if there is not None and found["t"] == "file" and there["t"] == "dir":
        raise ConflictError(f"{dst} is a folder", code="is-a-directory")
    for above in ancestors(dst)[1:]:
        entry = folder.entry(above)
        if entry is not None and entry["t"] != "dir":
            raise ConflictError(f"{above} is a file", code="not-a-directory")
    return found


def _tree(folder: EncryptedFolder, src: str, found: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every file and folder at and below `src` (its path relative to `src`, "" for itself),
    folders before what they hold."""
    if found["t"] == "file":
        return [("", found)]
    tree: list[tuple[str, dict[str, Any]]] = [("", found)]
    level = [src]
    while level:
        maps = folder.read_maps(level)
        level = []
        for parent, (dir_map, _) in maps.items():
            for name, entry in sorted(dir_map.entries.items()):
                rel = posixpath.join(parent, name)
                tree.append((rel[len(src) + 1 :], entry))
                if entry["t"] == "dir":
                    level.append(rel)
    return tree


def _join(base: str, rel: str) -> str:
    return posixpath.join(base, rel) if rel else base


def _bodies(
    folder: EncryptedFolder, src: str, tree: list[tuple[str, dict[str, Any]]]
) -> dict[str, dict[str, Any]]:
    """The source files' manifest bodies (path relative to `src` -> body), each authenticated
    and no older than its map entry says, in one read."""
    wanted = [(rel, Wanted(_join(src, rel), Path(), int(e["v"]))) for rel, e in tree if e["t"] == "file"]
    blobs = folder.store.read_many(folder.stored(w.rel) for _, w in wanted)
    return {rel: opened_manifest(folder, w, blobs[folder.stored(w.rel)]).to_json() for rel, w in wanted}


def _commit(
    folder: EncryptedFolder,
    src: str,
    dst: str,
    tree: list[tuple[str, dict[str, Any]]],
    bodies: dict[str, dict[str, Any]],
) -> int:
    """The copied names in their new folders' maps and the manifests sealed for their new paths."""
    targets = [(_join(dst, rel), entry) for rel, entry in tree]
    parents = {posixpath.dirname(path) for path, _ in targets}
    needed = parents | {d for path, _ in targets for d in ancestors(path)}
    maps = folder.read_maps(sorted(needed))
    before = {rel: dict(dir_map.entries) for rel, (dir_map, _) in maps.items()}
    written: dict[str, dict[str, Any]] = {}
    for path, entry in targets:
        parent, name = posixpath.split(path)
        entries = maps[parent][0].entries
        if entry["t"] == "dir":
            if entries.get(name, {}).get("t") != "dir":
                entries[name] = {"t": "dir"}
            continue
        old = before[parent].get(name)
        seen = folder.counters.seen(folder.keys.folder_id, "F:" + path)
        entries[name] = {**entry, "v": max(int(old.get("v", 0)) if old else 0, seen) + 1}
        written[path] = bodies[path[len(dst) + 1 :] if path != dst else ""]
    for above in ancestors(dst)[1:]:
        parent, name = posixpath.split(above)
        if maps[parent][0].entries.get(name, {}).get("t") != "dir":
            maps[parent][0].entries[name] = {"t": "dir"}
    changes = {rel: _edits(before[rel], maps[rel][0].entries) for rel in maps}
    changed = {rel for rel, edits in changes.items() if edits}
    replaced = {path for path in written if posixpath.basename(path) in before[posixpath.dirname(path)]}
    pending = Pending(
        {rel: maps[rel] for rel in changed}, {rel: changes[rel] for rel in changed}, written, replaced
    )
    return commit(folder, pending)
