"""Coded files as the delta, relay and share routes need them: how a job rebuilds one from its
blocks, a version's layout, and a coded file made whole in the home bucket or the relay cache."""

from __future__ import annotations

from typing import Any

from context import CONFIG, records, s3, s3_in

from hycloud_core.coded import whole as coded_whole
from hycloud_core.fs.blocks import BlockStore
from hycloud_core.fs.relay_cache import RelayCache
from hycloud_core.instances import on_ring
from hycloud_core.store import cached_copies


def relay_source(link: Any) -> dict:
    """What a relay job needs to rebuild a coded file: its layout (by name, in the relay cache)
    and every instance's bucket."""
    if link is None or not link.erasure:
        return {}
    return _rebuilt_from(link.content_hash, link.erasure)


def _rebuilt_from(content_hash: str, erasure: dict) -> dict:
    where = [{"region": i.region, "bucket": i.bucket} for i in on_ring(records().table)]
    name = RelayCache(CONFIG.cache_dir).save_layout(content_hash, erasure)
    return {"erasure_ref": name, "instances": where}


def _home_blocks() -> tuple[BlockStore, str]:
    return BlockStore(on_ring(records().table), s3_in), s3().meta.region_name


def whole_object(link: Any) -> str:
    """The home bucket's key of a coded file made whole, decoded unless a verified copy is there."""
    key = cached_copies.key_of(link.content_hash)
    if not cached_copies.holds(s3(), CONFIG.bucket, key, link.content_hash):
        store, own = _home_blocks()
        coded_whole.to_object(
            link.erasure, link.content_hash, store, own, s3(), CONFIG.bucket, key, CONFIG.coded_inline_bytes
        )
    return key


def coded_version(link: Any, content_hash: str) -> dict | None:
    """The layout of the path's version `content_hash` when it is coded (current or retained)."""
    if link is None:
        return None
    if link.content_hash == content_hash:
        return link.erasure
    return link.history_erasure.get(content_hash)


def coded_base(link: Any, content_hash: str, spec: dict, inline: bool = True) -> dict:
    """What the delta job `spec` is told of its base, version `content_hash` of the file `link`
    holds: nothing when that version is not coded (its object is fetched as usual) or is cached
    already (under its own name, or the path's as an earlier job's new version); nothing either
    when, with `inline`, this request decodes it into the cache (what one request can: the job may
    then run direct); else `base_source`, how the job's fetch rebuilds it from its blocks."""
    erasure = coded_version(link, content_hash)
    if not erasure:
        return {}
    cache, name = RelayCache(CONFIG.cache_dir), spec["base_cache_name"]
    if any(cache.is_ready(n, content_hash) for n in (name, spec.get("cache_name"))):
        return {}
    if inline and coded_whole.fits_inline(erasure, CONFIG.coded_inline_bytes):
        store, own = _home_blocks()
        coded_whole.to_cache(erasure, content_hash, store, own, cache, name, CONFIG.coded_inline_bytes)
        return {}
    return {"base_source": _rebuilt_from(content_hash, erasure)}
