"""In-memory dead properties that follow a whole tree in one step.

The gateway copies and removes folders with one API call each (a cloud job when the tree is
large) instead of WsgiDAV's member-by-member walk, so the properties of everything below must
be copied or dropped at once too.
"""

from __future__ import annotations

from wsgidav import util
from wsgidav.prop_man.property_manager import PropertyManager


class TreePropertyManager(PropertyManager):
    def _below(self, url: str) -> list[str]:
        if not self._loaded:
            self._lazy_open()
        return [key for key in self._dict if util.is_equal_or_child_uri(url, key)]

    def remove_tree(self, url: str) -> None:
        self._lock.acquire_write()
        try:
            for key in self._below(url):
                del self._dict[key]
        finally:
            self._lock.release()

    def copy_tree(self, src_url: str, dest_url: str) -> None:
        src_url, dest_url = src_url.rstrip("/"), dest_url.rstrip("/")
        self._lock.acquire_write()
        try:
            for key in self._below(src_url):
                self._dict[dest_url + key[len(src_url) :]] = self._dict[key].copy()
        finally:
            self._lock.release()
