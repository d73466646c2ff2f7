"""What a relay or delta job is told of a coded file (services/coded_files.py): its layout by name,
kept in the relay cache, whatever its size. A job's input is capped by Step Functions at 256 KiB
and a layout grows by about 200 bytes a chunk, so a layout passed inline would fail a large
coded file's relay; the deployment's coded relays (tests/e2e/test_geo.py) run this same path."""

from __future__ import annotations

import importlib
import json

from hycloud_core import content
from hycloud_core.fs.relay_cache import RelayCache
from tests.conftest import load_function

SFN_INPUT_LIMIT = 256 * 1024


def _layout(chunks: int) -> dict:
    """A layout the shape of a coded file's (k of n blocks a chunk), `chunks` chunks long."""
    digest = lambda *parts: content.hash_bytes("/".join(map(str, parts)).encode())  # noqa: E731
    return {
        "k": 2,
        "n": 3,
        "chunk_size": 4096,
        "chunks": [
            {"size": 4096, "hash": digest(c), "blocks": [digest(c, b) for b in range(3)]}
            for c in range(chunks)
        ],
    }


def test_a_layout_past_the_job_input_limit_reaches_the_job_by_name(stores, monkeypatch):
    load_function("controller")
    coded_files = importlib.import_module("services.coded_files")
    monkeypatch.setattr(coded_files, "on_ring", lambda table: [])
    layout, file_hash = _layout(2_304), "c" * 64
    assert len(json.dumps(layout)) > SFN_INPUT_LIMIT

    class Link:
        content_hash, erasure = file_hash, layout

    spec = coded_files.relay_source(Link())
    assert len(json.dumps(spec)) < 1024 and "erasure" not in spec
    assert RelayCache(coded_files.CONFIG.cache_dir).layout(spec["erasure_ref"]) == layout


def test_a_delta_base_that_is_coded_and_too_large_to_decode_inline_is_named_too(stores, monkeypatch):
    load_function("controller")
    coded_files = importlib.import_module("services.coded_files")
    monkeypatch.setattr(coded_files, "on_ring", lambda table: [])
    layout, base_hash = _layout(2_304), "d" * 64

    class Link:
        content_hash, erasure, history_erasure = "e" * 64, None, {base_hash: layout}

    spec = {"base_cache_name": f"base#{base_hash}", "cache_name": "u-1#f"}
    told = coded_files.coded_base(Link(), base_hash, spec, inline=False)
    assert len(json.dumps(told)) < 1024
    assert RelayCache(coded_files.CONFIG.cache_dir).layout(told["base_source"]["erasure_ref"]) == layout
