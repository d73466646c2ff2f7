"""The caches `hycloud mount` and `hycloud serve webdav` both serve from: folder listings and
entries kept a few seconds (`meta.py`), and a bounded write-back cache whose flusher sends small
files many to a request (`writeback.py`), wired together for one client (`wired.py`)."""

from .wired import Caches, learn_sent, local_entry, still_valid

__all__ = ["Caches", "learn_sent", "local_entry", "still_valid"]
