"""Emulated client access link (bandwidth + round-trip time) on loopback, for benchmarks.

Cloud-internal traffic never passes through it; only what the client sends
through `WanLink` (its URL, or a session with `WanAdapter` mounted) is shaped.
"""

from .adapter import WanAdapter, rewrite_url, session_through
from .link import WanLink
from .proxy import LinkProxy, LinkShape
from .spawned import SpawnedWanLink
from .stats import ConnectionStats, LinkStats

__all__ = [
    "ConnectionStats",
    "LinkProxy",
    "LinkShape",
    "LinkStats",
    "SpawnedWanLink",
    "WanAdapter",
    "WanLink",
    "rewrite_url",
    "session_through",
]
