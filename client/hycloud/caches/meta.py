"""The mount's metadata cache: entries and folder listings kept for `ttl` seconds.

Tools such as `git status` stat every file of a tree, most of them in folders they never list.
A stat that misses lists the file's folder once (one request for all its siblings, and the
answer "no such file" for every name not in it), so a walk costs about one request per folder
per `ttl`, not one per file. Changes made through the mount drop what they touch (and a
generation counter keeps a listing fetched before a change from being stored after it);
another client's changes are seen once the entries expire.
"""

from __future__ import annotations

import itertools
import os
import threading
import time

from hycloud_core.errors import ConflictError, NotFoundError

from ..sdk import HyCloud

TTL_S = 2.0
PAGE = 1000  # a folder with more entries than one page is not listed for a stat
BIG = object()  # listing marker: the folder is too big to list for a stat


class MetaCache:
    def __init__(self, client: HyCloud, ttl: float = TTL_S, page: int = PAGE) -> None:
        self.client, self.ttl, self.page = client, ttl, page
        self._attrs: dict[str, tuple[float, dict | None]] = {}
        self._listings: dict[str, tuple[float, dict[str, dict] | object]] = {}
        self._generation = 0
        self._lock = threading.Lock()
        self._fetch_locks: dict[str, threading.Lock] = {}

    def entry(self, path: str) -> dict | None:
        """The entry at `path`, None if there is none."""
        hit = self._fresh(self._attrs, path)
        if hit is not None:
            return hit[1]
        if path != "/":
            names = self._sibling_names(os.path.dirname(path))
            if isinstance(names, dict):
                return names.get(os.path.basename(path))
        try:
            entry = self.client.stat(path)
        except NotFoundError:
            entry = None
        self.remember(path, entry)
        return entry

    def listing(self, path: str) -> list[dict]:
        """All entries of folder `path` (the cached listing while fresh)."""
        hit = self._fresh(self._listings, path)
        if hit is not None and isinstance(hit[1], dict):
            return list(hit[1].values())
        lock = self._claim(path)
        if lock is None:
            kept = self.listing_kept(path)
            if kept is not None:
                return kept
            lock = self._claim(path, wait=True)  # what is kept is no listing (too big): wait
            assert lock is not None  # a claim that waits is always granted
        try:
            hit = self._fresh(self._listings, path)  # listed by another thread meanwhile
            if hit is not None and isinstance(hit[1], dict):
                return list(hit[1].values())
            generation = self._generation
            entries = list(self.client.iter_dir(path))
            self._store(path, {e["name"]: e for e in entries}, generation)
            return entries
        finally:
            lock.release()

    def listing_kept(self, path: str) -> list[dict] | None:
        """The folder's last listing, expired or not (None if none is kept)."""
        with self._lock:
            hit = self._listings.get(path)
        return list(hit[1].values()) if hit is not None and isinstance(hit[1], dict) else None

    def remember(self, path: str, entry: dict | None) -> None:
        with self._lock:
            self._attrs[path] = (time.monotonic() + self.ttl, entry)

    def learn(self, path: str, entry: dict) -> None:
        """The mount itself made `entry` at `path` (a file sent, a folder made): kept, and added to
        its folder's cached listing rather than dropping that listing."""
        folder = os.path.dirname(path) or "/"
        with self._lock:
            self._attrs[path] = (time.monotonic() + self.ttl, entry)
            hit = self._listings.get(folder)
            if hit is not None and isinstance(hit[1], dict):
                hit[1][entry["name"]] = entry

    def empty(self, folder: str) -> None:
        """`folder` was made through the mount just now: its listing is known to be empty."""
        with self._lock:
            self._listings[folder] = (time.monotonic() + self.ttl, {})

    def forget(self, *paths: str) -> None:
        """Drop `paths`, everything under them, and their folders' entries and listings. Listings
        being fetched meanwhile are not kept (they may predate the change): nothing to drop, no
        such cost."""
        if not paths:
            return
        with self._lock:
            self._generation += 1
            for path in paths:
                parent = os.path.dirname(path) or "/"
                for table in (self._attrs, self._listings):
                    table.pop(parent, None)
                    table.pop(path, None)
                    under = path.rstrip("/") + "/"
                    for key in [k for k in table if k.startswith(under)]:
                        del table[key]

    def _sibling_names(self, folder: str) -> dict[str, dict] | object | None:
        """The folder's entries by name: from cache, else one page listed; BIG or None if unknown."""
        hit = self._fresh(self._listings, folder)
        if hit is not None:
            return hit[1]
        lock = self._claim(folder)
        if lock is None:
            with self._lock:
                kept = self._listings.get(folder)
            return kept[1] if kept is not None else None
        try:
            hit = self._fresh(self._listings, folder)  # listed by another thread meanwhile
            if hit is not None:
                return hit[1]
            generation = self._generation
            try:
                entries = list(itertools.islice(self.client.iter_dir(folder, self.page), self.page))
            except NotFoundError:
                return {}  # no folder, so no entry in it
            except ConflictError:
                return None  # not a folder: let stat answer as it does
            names = {e["name"]: e for e in entries} if len(entries) < self.page else BIG
            self._store(folder, names, generation)
            return names
        finally:
            lock.release()

    def _claim(self, folder: str, wait: bool = False) -> threading.Lock | None:
        """The right to list `folder`, held (release it), or None: another thread is listing it and
        its expired listing answers meanwhile (so a change by another client is seen within the
        timeout plus one listing). One listing of a folder at a time: threads that miss together
        (a tool's parallel stats, a WebDAV client's parallel PUTs) do not each make one; with no
        listing kept (none yet, or dropped by a change through this client) they wait for it."""
        with self._lock:
            lock = self._fetch_locks.setdefault(folder, threading.Lock())
            kept = folder in self._listings
        return lock if lock.acquire(blocking=wait or not kept) else None

    def _store(self, folder: str, names: dict[str, dict] | object, generation: int) -> None:
        with self._lock:
            if generation != self._generation:
                return  # a change through the mount happened meanwhile: this listing may predate it
            expires = time.monotonic() + self.ttl
            self._listings[folder] = (expires, names)
            if isinstance(names, dict):
                for name, entry in names.items():
                    self._attrs[os.path.join(folder, name)] = (expires, entry)

    def _fresh(self, table: dict, key: str) -> tuple | None:
        with self._lock:
            hit = table.get(key)
        return hit if hit is not None and hit[0] > time.monotonic() else None
