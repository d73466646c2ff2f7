"""Each user's caches in the gateway: the mount's metadata cache and write-back cache
(`hycloud.caches`), one pair per user, in a folder of its own under the gateway's cache folder.

A small file PUT is answered once its bytes are in the cache; the flusher sends the files put
together in bundles, as the mount does. Listings and stats are kept `ttl` seconds and updated by
the gateway's own changes. `stop` sends everything before the gateway ends.
"""

from __future__ import annotations

import sys
import tempfile
import threading
from pathlib import Path

from ..caches import Caches
from ..caches.meta import TTL_S
from ..caches.writeback import LIMIT
from ..sdk import HyCloud


class Workspaces:
    def __init__(self, cache_dir: str | None = None, limit: int = LIMIT, ttl: float = TTL_S) -> None:
        self.cache_dir, self.limit, self.ttl = cache_dir, limit, ttl
        self._by_user: dict[str, Caches] = {}
        self._lock = threading.Lock()

    def for_user(self, user: str, client: HyCloud) -> Caches:
        """The user's caches; they send with `client` (the key that last logged in)."""
        with self._lock:
            caches = self._by_user.get(user)
            if caches is None:
                folder = Path(tempfile.mkdtemp(prefix="hycloud-dav-cache-", dir=self.cache_dir))
                caches = self._by_user[user] = Caches(client, folder, self.limit, self.ttl)
            caches.client = client
            return caches

    def stop(self) -> list[str]:
        """Send everything cached for every user; the paths that could not be sent (kept on disk)."""
        with self._lock:
            users = list(self._by_user.items())
        lost = [f"{user}:{path}" for user, caches in users for path in caches.files.stop()]
        if lost:
            print(f"hycloud serve webdav: not sent: {', '.join(lost)}", file=sys.stderr)
        return lost
