"""The small-file threshold a request is judged by, and the access meter the choice is made from.

The threshold in force (hycloud_core.cost.thresholds) is read at most every 15 s per user and kept in
the container: the upkeep changes it at most hourly. Clients learn it from GET /v1/whoami and
decide small or large by it; the controller accepts a small file up to the larger of it and the
configured value, so a client that asked before a change is not refused (the upkeep's moves put
the file on its side later). A fixed threshold is the configured value, for both.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from context import CONFIG, records

from hycloud_core.cost import access_meter, thresholds
from hycloud_core.cost.thresholds import InForce, Thresholds

TTL_S = 15.0
_CACHE: dict[str, tuple[float, InForce]] = {}


def in_force(user: str) -> InForce:
    now = time.monotonic()
    hit = _CACHE.get(user)
    if hit and now - hit[0] < TTL_S:
        return hit[1]
    found = Thresholds(records().table).in_force(
        user, CONFIG.small_file_threshold, CONFIG.small_file_threshold_fixed
    )
    _CACHE[user] = (now, found)
    return found


def accept_limit(user: str) -> int:
    """The largest small file accepted from `user` (see the module's note)."""
    fixed = CONFIG.small_file_threshold_fixed
    return thresholds.accept_limit(in_force(user), CONFIG.small_file_threshold, fixed)


def meter(user: str, reads: Iterable[int] = (), writes: Iterable[int] = ()) -> None:
    """Count whole-file reads and writes for the threshold's choice (never fails the request)."""
    access_meter.record(records().table, user, reads, writes)
