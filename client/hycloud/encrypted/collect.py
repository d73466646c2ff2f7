"""Chunk collection: chunks no file manifest of the folder names are removed after a grace period.

Chunks are shared (dedup) and named by content, so a chunk is garbage only when no manifest names
it: after `sync --delete` removed a file, or a new version replaced the chunks an edit touched.
A collection (1) lists the chunks with their write times and the live leases (leases.py), (2)
reads every name map and file manifest (each checked, as a download does) for the chunks they
name, and takes as candidates the chunks named by none, touched by no live lease, and written
more than `grace_s` ago (a crashed upload's chunks, young, are kept). (3) It writes the marker,
then reads the leases again: an upload in flight (it may hold an older view of the chunks) means
nothing is removed this time. (4) It reads the manifests again (what uploads finished meanwhile
committed) and removes the candidates still named by none, then the marker.

Old manifest versions (version history, the trash) are not read: restoring a manifest whose
chunks were collected gives a "chunk is missing" refusal, never wrong data. The grace period is
also how long such a restore is sure to work.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hycloud_core.crypto import chunks
from hycloud_core.errors import BadRequestError

from . import download
from .folder import EncryptedFolder
from .leases import LEASE_TTL, MARKER, live_leases, spared

DAY = 24 * 3600.0
BATCH = 500  # manifests read per request


@dataclass
class Collected:
    chunks: int = 0  # chunk objects in the folder
    referenced: int = 0
    touched: int = 0  # unreferenced, but named by an upload in flight
    young: int = 0  # unreferenced, written within the grace period
    removed: list[str] = field(default_factory=list)
    deferred: bool = False  # an upload was in flight: nothing removed this time
    dry_run: bool = False


def referenced(folder: EncryptedFolder) -> set[str]:
    """The chunks every file manifest of the folder names (each manifest authenticated)."""
    files = [download.Wanted(rel, Path(rel), int(e["v"])) for rel, e in download.walk(folder)]
    names: set[str] = set()
    for start in range(0, len(files), BATCH):
        group = files[start : start + BATCH]
        blobs = folder.store.read_many(folder.stored(f.rel) for f in group)
        for file in group:
            body = download.opened_manifest(folder, file, blobs[folder.stored(file.rel)])
            names.update(ref.name for ref in body.chunks)
    return names


def collect(
    folder: EncryptedFolder,
    grace_s: float = DAY,
    dry_run: bool = False,
    clock: Callable[[], float] = time.time,
) -> Collected:
    """Remove the folder's unreferenced chunks older than `grace_s` (see the module's steps)."""
    if grace_s < LEASE_TTL:
        raise BadRequestError(
            f"the grace period is at least {int(LEASE_TTL)} s (a lease's life)", code="bad-usage"
        )
    store, now = folder.store, clock()
    written = store.listing(chunks.DIR)
    touched = set().union(*live_leases(store, now).values())
    live = referenced(folder)
    unreferenced = {name for name in written if name not in live}
    kept = {n for n in unreferenced if spared(n, touched)}
    candidates = {n for n in unreferenced - kept if written[n] < now - grace_s}
    result = Collected(
        chunks=len(written),
        referenced=len(written) - len(unreferenced),
        touched=len(kept),
        young=len(unreferenced - kept - candidates),
        dry_run=dry_run,
    )
    if dry_run or not candidates:
        result.removed = sorted(candidates) if dry_run else []
        return result
    store.write_many({MARKER: f'{{"at": {clock()}}}'.encode()})
    try:
        if live_leases(store, clock()):
            result.deferred = True
            return result
        doomed = sorted(candidates - referenced(folder))
        for name in doomed:
            store.remove(chunks.object_path(name))
        result.removed = doomed
        return result
    finally:
        store.remove(MARKER)
