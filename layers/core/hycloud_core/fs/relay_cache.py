"""The relay cache on EFS (seed 000 §III-B): large files copied from S3 for fast, ranged reads.

A cached file is named after its full path with '/' replaced by '#'; a sidecar `<name>.hcmeta`
holds the content hash it was filled from, so a new version of the file is never served from
an old copy. Every read refreshes the file's mtime, which is both the LRU order for eviction and
the sign that a transfer is in progress (see `evict`).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from typing import Any

from ..atomic import atomic_write
from ..errors import BadRequestError, ConflictError
from ..relay import layout_name

META_SUFFIX = ".hcmeta"
LAYOUT_DIR = ".layouts"  # coded files' layouts handed to jobs by name; eviction skips dot-names
LAYOUT_TTL_S = 86_400  # far beyond any queued job's wait (docs/SCHEDULING.md)
IN_USE_S = 300  # a file read within this many seconds belongs to a transfer: never evicted
MAX_PIECE = 4 * 1024 * 1024  # base64 of 4 MiB stays under Lambda's 6 MB response limit


def check_range(offset: int, length: int) -> None:
    """A piece the API may return in one response (cache reads and delta downloads alike)."""
    if not 0 < length <= MAX_PIECE or offset < 0:
        raise BadRequestError(f"length must be 1..{MAX_PIECE} and offset ≥ 0", code="bad-range")


@dataclass
class CacheEntry:
    name: str
    size: int
    last_used: float


class RelayCache:
    def __init__(self, cache_dir: str) -> None:
        self.dir = cache_dir
        os.makedirs(cache_dir, exist_ok=True)

    def path(self, name: str) -> str:
        if not name or "/" in name or name.startswith(".") or name.endswith(META_SUFFIX):
            raise BadRequestError("bad cache name", code="bad-cache-name")
        return os.path.join(self.dir, name)

    def _meta(self, name: str) -> dict[str, Any]:
        """What the sidecar records (content hash, when cached, settling); empty when none."""
        try:
            with open(self.path(name) + META_SUFFIX) as f:
                doc = json.load(f)
        except (FileNotFoundError, ValueError):
            return {}
        return doc if isinstance(doc, dict) else {}

    def content_hash(self, name: str) -> str | None:
        found = self._meta(name).get("content_hash")
        return found if isinstance(found, str) else None

    def is_ready(self, name: str, content_hash: str) -> bool:
        return os.path.exists(self.path(name)) and self.content_hash(name) == content_hash

    def publish(self, name: str, tmp_file: str, content_hash: str, settling: bool = False) -> None:
        """Move a fully written temporary file into place, then record what it holds; `settling`:
        its only copy (a delta upload's version on its way to S3), never evicted until `settled`."""
        meta = self.path(name) + META_SUFFIX
        if os.path.exists(meta):
            os.unlink(meta)  # no reader may match the old hash against the new bytes
        os.replace(tmp_file, self.path(name))
        self._describe(name, content_hash, settling)

    def _describe(self, name: str, content_hash: str, settling: bool) -> None:
        doc = {
            "content_hash": content_hash,
            "cached": time.time(),
            **({"settling": True} if settling else {}),
        }
        atomic_write(self.path(name) + META_SUFFIX, json.dumps(doc))

    def link_as(self, name: str, existing: str, content_hash: str) -> bool:
        """Whether `name` holds `content_hash`, made so from `existing` when that does (a hard
        link: no copy, and either name may be evicted without the other)."""
        if self.is_ready(name, content_hash):
            return True
        if not self.is_ready(existing, content_hash):
            return False
        tmp = os.path.join(self.dir, f".hc-tmp-{uuid.uuid4().hex}")
        try:
            os.link(self.path(existing), tmp)
        except OSError:
            return False  # replaced or evicted meanwhile: the caller fetches it
        self.publish(name, tmp, content_hash)
        return True

    def is_settling(self, name: str) -> bool:
        return bool(self._meta(name).get("settling"))

    def _mark(self, name: str, content_hash: str, settling: bool) -> None:
        """Set whether the file (holding `content_hash`) is kept until it settles."""
        meta = self._meta(name)
        if meta.get("content_hash") == content_hash and bool(meta.get("settling")) != settling:
            self._describe(name, content_hash, settling)

    def pin(self, name: str, content_hash: str) -> None:
        """Keep the file (holding `content_hash`) until it settles."""
        self._mark(name, content_hash, settling=True)

    def settled(self, name: str, content_hash: str) -> None:
        """The file's content is in S3 now: it may be evicted like any other."""
        self._mark(name, content_hash, settling=False)

    def settling(self) -> list[tuple[str, str, float]]:
        """(name, content hash, when kept) of every file kept until it settles."""
        out = []
        for e in self.entries():
            meta = self._meta(e.name)
            if meta.get("settling") and isinstance(meta.get("content_hash"), str):
                out.append((e.name, meta["content_hash"], float(meta.get("cached", 0))))
        return out

    def read(self, name: str, content_hash: str, offset: int, length: int) -> bytes:
        check_range(offset, length)
        if not self.is_ready(name, content_hash):
            raise ConflictError(
                "the file is not in the relay cache; start a relay job", code="relay-not-ready"
            )
        path = self.path(name)
        os.utime(path)
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(length)

    def save_layout(self, content_hash: str, layout: dict[str, Any]) -> str:
        """A coded file's layout kept for a job, by name: a job's input cannot carry a large
        file's (about 200 bytes per chunk against Step Functions' 256 KiB and an item's 400 KB)."""
        if not content_hash or "/" in content_hash or content_hash.startswith("."):
            raise BadRequestError("bad content hash", code="bad-content-hash")
        name = layout_name(content_hash, layout)
        path = os.path.join(self.dir, LAYOUT_DIR, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.exists(path):
            os.utime(path)  # in use again: not pruned for another day
            return name
        atomic_write(path, json.dumps(layout))
        return name

    def layout(self, name: str) -> dict[str, Any]:
        """The layout `save_layout` kept under `name`."""
        if not name or "/" in name or name.startswith("."):
            raise BadRequestError("bad layout name", code="bad-layout-name")
        with open(os.path.join(self.dir, LAYOUT_DIR, name)) as f:
            layout: dict[str, Any] = json.load(f)
            return layout

    def prune_layouts(self, now: float | None = None) -> int:
        """Forget layouts no job asked for in LAYOUT_TTL_S; how many went."""
        now, gone = time.time() if now is None else now, 0
        try:
            with os.scandir(os.path.join(self.dir, LAYOUT_DIR)) as it:
                for e in it:
                    if e.is_file() and now - e.stat().st_mtime > LAYOUT_TTL_S:
                        os.unlink(e.path)
                        gone += 1
        except FileNotFoundError:
            pass
        return gone

    def entries(self) -> list[CacheEntry]:
        out = []
        with os.scandir(self.dir) as it:
            for e in it:
                if e.is_file() and not e.name.endswith(META_SUFFIX) and not e.name.startswith("."):
                    st = e.stat()
                    out.append(CacheEntry(e.name, st.st_size, st.st_mtime))
        return out

    def evict(self, budget: int, now: float | None = None) -> list[str]:
        """Remove least-recently-used files until the cache fits `budget`, sparing files in use."""
        now = time.time() if now is None else now
        self.prune_layouts(now)
        entries = sorted(self.entries(), key=lambda e: e.last_used)
        total, evicted = sum(e.size for e in entries), []
        for e in entries:
            if total <= budget:
                break
            if now - e.last_used < IN_USE_S or self.is_settling(e.name):
                continue
            for suffix in (META_SUFFIX, ""):
                try:
                    os.unlink(self.path(e.name) + suffix)
                except FileNotFoundError:
                    pass
            total -= e.size
            evicted.append(e.name)
        return evicted
