"""The mount's metadata cache: folder listings served stale while they are refreshed, kept exact by
this client's own changes.

Tools such as `git status` stat every file of a tree, most of them in folders they never list.
A stat that misses lists the file's folder once (one request for all its siblings, and the
answer "no such file" for every name not in it), so a walk costs about one request per folder.

Ages. A listing younger than `ttl` answers as is. Up to `max_age` it still answers at once and
one refresh of it starts in the background (one per folder at a time, `REFRESHERS` folders at
most), so a slow cloud never stalls a lookup on a listing it already has. Past `max_age` the
lookup waits for a new listing (or, when one is already being fetched, answers from the old one
until it lands). So another client's change is seen at most `max_age` (plus one listing) after
it was made, usually `ttl` after.

Own changes. A change made through this client (a file sent, a folder made, a removal, a move)
edits the cached listings it touches instead of dropping them, so they stay exact and nothing is
listed again; changes made while a listing is being fetched are applied to it when it lands. A
folder written into within the last `ttl` is not refreshed until half its `max_age` is reached
(a `tar x` into it is not slowed by listings of what it is writing).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from hycloud_core.errors import ConflictError, NotFoundError

from ..sdk import HyCloud
from . import threads

TTL_S = 2.0
MAX_AGE_FACTOR = 15  # a listing answers up to ttl × this old (30 s by default), refreshed meanwhile
PAGE = 1000  # a folder with more entries than one page is not listed for a stat
REFRESHERS = 4  # background refreshes in flight at once
BIG = object()  # answer for a folder too big to list for a stat
UNKNOWN = object()  # `known`: nothing cached answers for the path
Names = dict[str, dict]


@dataclass
class Listing:
    names: Names | None  # None: the folder has more than a page of entries, none of them kept
    fetched: float  # when the request that brought it started: its age counts from there
    written: float = float("-inf")  # last change made through this client


@dataclass
class _Fetch:
    """A listing being fetched: the changes made to the folder meanwhile, applied when it lands."""

    edits: dict[str, dict | None] = field(default_factory=dict)
    void: bool = False  # the folder was dropped meanwhile (moved, removed): the answer is not kept


class MetaCache:
    def __init__(
        self,
        client: HyCloud,
        ttl: float = TTL_S,
        page: int = PAGE,
        max_age: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client, self.ttl, self.page, self.clock = client, ttl, page, clock
        self.max_age = ttl * MAX_AGE_FACTOR if max_age is None else max(max_age, ttl)
        self._attrs: dict[str, tuple[float, dict | None]] = {}
        self._listings: dict[str, Listing] = {}
        self._fetches: dict[str, _Fetch] = {}
        self._generation = 0  # attributes asked one by one are kept only if nothing changed meanwhile
        self._lock = threading.Lock()
        self._fetch_locks: dict[str, threading.Lock] = {}
        self._refreshing: set[str] = set()
        self._idle = threading.Condition(self._lock)

    # --- lookups -------------------------------------------------------------------------------------
    def entry(self, path: str) -> dict | None:
        """The entry at `path`, None if there is none."""
        hit = self._fresh_attr(path)
        if hit is not None:
            return hit[1]
        if path != "/":
            names = self._names(os.path.dirname(path), full=False)
            if isinstance(names, dict):
                return names.get(os.path.basename(path))
        generation = self._generation
        try:
            entry = self.client.stat(path)
        except NotFoundError:
            entry = None
        with self._lock:
            if generation == self._generation:
                self._attrs[path] = (self.clock() + self.ttl, entry)
        return entry

    def known(self, path: str) -> dict | None | object:
        """What the cache holds about `path` without asking the cloud: its entry, None (a complete
        listing of its folder, within `max_age`, lacks it), or UNKNOWN."""
        hit = self._fresh_attr(path)
        if hit is not None:
            return hit[1]
        kept = self._usable(os.path.dirname(path) or "/")
        if kept is None or kept.names is None:
            return UNKNOWN
        return kept.names.get(os.path.basename(path))

    def listing(self, path: str) -> list[dict]:
        """All entries of folder `path`."""
        names = self._names(path, full=True)
        assert isinstance(names, dict)  # a full listing is complete or raises
        return list(names.values())

    def listing_kept(self, path: str) -> list[dict] | None:
        """The folder's last listing, whatever its age (None if none is kept)."""
        with self._lock:
            kept = self._listings.get(path)
            return list(kept.names.values()) if kept is not None and kept.names is not None else None

    # --- what this client changed --------------------------------------------------------------------
    def remember(self, path: str, entry: dict | None) -> None:
        with self._lock:
            self._attrs[path] = (self.clock() + self.ttl, entry)

    def learn(self, path: str, entry: dict) -> None:
        """The client made `entry` at `path` (a file sent, a folder made): its folder's listing
        gains it, nothing is listed again."""
        with self._lock:
            self._edit(path, entry)

    def learn_dirs(self, paths: list[str]) -> None:
        """Folders the client made in the cloud: their folders' listings gain them (a listing
        fetched before they reached the cloud lacks them)."""
        with self._lock:
            for path in paths:
                name = os.path.basename(path)
                kept = self._listings.get(os.path.dirname(path) or "/")
                if kept is None or kept.names is None or name not in kept.names:
                    self._edit(path, {"name": name, "type": "dir", "size": 0, "mtime": time.time()})

    def removed(self, path: str) -> None:
        """The client removed `path` (a file, or a folder and all under it)."""
        with self._lock:
            self._edit(path, None)
            self._drop_under(path)

    def moved(self, old: str, new: str) -> None:
        """The client moved `old` to `new`: both folders' listings edited, what was cached under
        `old` now answers under `new`. Without a known entry for `old`, `new`'s folder is dropped."""
        with self._lock:
            entry = self._cached_entry(old)
            self._edit(old, None)
            if entry is None:
                self._drop_under(old)
                self._drop(new, os.path.dirname(new) or "/")
                return
            self._edit(new, {**entry, "name": os.path.basename(new)})
            self._relocate(old, new)

    def wrote(self, folder: str) -> None:
        """A file is being written in `folder` through this client (not sent yet)."""
        with self._lock:
            kept = self._listings.get(folder)
            if kept is not None:
                kept.written = self.clock()

    def empty(self, folder: str) -> None:
        """`folder` was made through the client just now: its listing is known to be empty."""
        with self._lock:
            now = self.clock()
            self._listings[folder] = Listing({}, now, now)

    def forget(self, *paths: str) -> None:
        """Drop `paths`, everything under them, and their folders' entries and listings (a change
        whose effect on them is not known). Listings being fetched of those folders are not kept."""
        if not paths:
            return
        with self._lock:
            for path in paths:
                self._drop(path, os.path.dirname(path) or "/")

    def settle(self, timeout: float = 5.0) -> bool:
        """Wait until no background refresh is in flight (tests, shutdown)."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._refreshing, timeout)

    # --- listings ------------------------------------------------------------------------------------
    def _names(self, folder: str, full: bool) -> Names | object | None:
        """The folder's entries by name (a cached listing, else one fetched); for a stat (`full`
        False) only one page is fetched: BIG if there are more, None if `folder` is a file."""
        kept = self._usable(folder)
        if kept is not None and (kept.names is not None or not full):
            return kept.names if kept.names is not None else BIG
        lock = self._claim(folder)
        if lock is None:  # being fetched: its last listing answers meanwhile
            with self._lock:
                old = self._listings.get(folder)
            if old is not None and (old.names is not None or not full):
                return old.names if old.names is not None else BIG
            lock = self._claim(folder, wait=True)
            assert lock is not None  # a claim that waits is always granted
        try:
            kept = self._usable(folder)  # fetched by another thread meanwhile
            if kept is not None and (kept.names is not None or not full):
                return kept.names if kept.names is not None else BIG
            return self._fetch(folder, full)
        finally:
            lock.release()

    def _usable(self, folder: str) -> Listing | None:
        """The kept listing if within `max_age` (a refresh started when past `ttl`), else None."""
        with self._lock:
            kept = self._listings.get(folder)
            if kept is None:
                return None
            now = self.clock()
            age = now - kept.fetched
            if age < self.ttl:
                return kept
            if age >= self.max_age:
                return None
            if now - kept.written >= self.ttl or age >= self.max_age / 2:
                self._refresh_later(folder)
            return kept

    def _fetch(self, folder: str, full: bool) -> Names | object | None:
        """List `folder` (claimed by the caller) and keep the answer, with the changes made meanwhile."""
        started = self.clock()
        fetch = _Fetch()
        with self._lock:
            self._fetches[folder] = fetch
        try:
            listed = self.client.iter_dir(folder, self.page)
            entries = list(listed if full else itertools.islice(listed, self.page))
        except NotFoundError:
            with self._lock:
                self._fetches.pop(folder, None)
            if full:
                raise
            return {}  # no folder, so no entry in it
        except ConflictError:
            with self._lock:
                self._fetches.pop(folder, None)
            if full:
                raise
            return None  # not a folder: let stat answer as it does
        except BaseException:
            with self._lock:
                self._fetches.pop(folder, None)
            raise
        names: Names | None = {e["name"]: e for e in entries}
        if not full and len(entries) >= self.page:
            names = None
        with self._lock:
            self._fetches.pop(folder, None)
            if names is not None:
                for name, entry in fetch.edits.items():
                    names.pop(name, None) if entry is None else names.__setitem__(name, entry)
            if not fetch.void:
                old = self._listings.get(folder)
                written = old.written if old is not None else float("-inf")
                self._listings[folder] = Listing(names, started, written)
        return names if names is not None else BIG

    def _refresh_later(self, folder: str) -> None:
        """One background refresh of `folder` (caller holds the lock); skipped when one is in
        flight or `REFRESHERS` are."""
        if folder in self._refreshing or len(self._refreshing) >= REFRESHERS:
            return
        self._refreshing.add(folder)
        threads.start("hycloud-relist", self._refresh, folder)

    def _refresh(self, folder: str) -> None:
        try:
            lock = self._claim(folder)
            if lock is None:
                return  # a lookup is fetching it already
            try:
                with self._lock:
                    kept = self._listings.get(folder)
                self._fetch(folder, full=kept is not None and kept.names is not None)
            finally:
                lock.release()
        except Exception:  # noqa: BLE001 - a failed refresh leaves the listing to age; lookups retry
            pass
        finally:
            with self._idle:
                self._refreshing.discard(folder)
                self._idle.notify_all()

    def _claim(self, folder: str, wait: bool = False) -> threading.Lock | None:
        """The right to list `folder`, held (release it), or None: another thread is listing it.
        One listing of a folder at a time: threads that miss together (a tool's parallel stats, a
        WebDAV client's parallel PUTs) do not each make one."""
        with self._lock:
            lock = self._fetch_locks.setdefault(folder, threading.Lock())
        return lock if lock.acquire(blocking=wait) else None

    # --- edits (the caller holds the lock) --------------------------------------------------------
    def _edit(self, path: str, entry: dict | None) -> None:
        folder, name = os.path.dirname(path) or "/", os.path.basename(path)
        now = self.clock()
        self._generation += 1
        self._attrs[path] = (now + self.ttl, entry)
        kept = self._listings.get(folder)
        if kept is not None:
            kept.written = now
            if kept.names is not None:
                kept.names.pop(name, None) if entry is None else kept.names.__setitem__(name, entry)
        fetch = self._fetches.get(folder)
        if fetch is not None:
            fetch.edits[name] = entry

    def _cached_entry(self, path: str) -> dict | None:
        hit = self._attrs.get(path)
        if hit is not None and hit[1] is not None:
            return hit[1]
        kept = self._listings.get(os.path.dirname(path) or "/")
        return kept.names.get(os.path.basename(path)) if kept is not None and kept.names else None

    def _relocate(self, old: str, new: str) -> None:
        """What is cached under `old` (a moved folder) answers under `new`."""
        self._drop_under(new)
        under = old.rstrip("/") + "/"
        for key in [k for k in self._attrs if k.startswith(under)]:
            self._attrs[new + key[len(old) :]] = self._attrs.pop(key)
        for key in [k for k in self._listings if k == old or k.startswith(under)]:
            self._listings[new + key[len(old) :]] = self._listings.pop(key)
        for key, fetch in self._fetches.items():
            if key == old or key.startswith(under):
                fetch.void = True

    def _drop_under(self, path: str) -> None:
        self._generation += 1
        under = path.rstrip("/") + "/"
        for table in (self._attrs, self._listings):
            for key in [k for k in table if k.startswith(under)]:
                del table[key]
        self._listings.pop(path, None)
        for key, fetch in self._fetches.items():
            if key == path or key.startswith(under):
                fetch.void = True

    def _drop(self, path: str, parent: str) -> None:
        self._generation += 1
        for key in (path, parent):
            self._attrs.pop(key, None)
            self._listings.pop(key, None)
            if key in self._fetches:
                self._fetches[key].void = True
        self._drop_under(path)

    def _fresh_attr(self, path: str) -> tuple | None:
        with self._lock:
            hit = self._attrs.get(path)
        return hit if hit is not None and hit[0] > self.clock() else None
