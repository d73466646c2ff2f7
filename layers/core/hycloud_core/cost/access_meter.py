"""Reads and writes per user and size band: what the small-file threshold is chosen from.

The controller adds every whole-file read and write it serves (a small file's PUT and GET, a large
file's commit and download link, a bundle's members) to one item per user, `METER#<user>` /
`ACCESS`, as atomic counters `r<k>` and `w<k>` of size band k: sizes in (2^(k-1), 2^k], 4 KiB and
less in band 12, 1 GiB and more in band 30. `since` is when the item was first written, so a
count over the time since is a rate. Bands rather than files keep it to one small item and one
write per call ($0.625 per million, a sixth of what API Gateway charges the same call); the
choice spreads a band's reads evenly over its files (cost/threshold_choice.py). Metering never
fails a request: an error is logged and the count lost.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ..observability import logger

SK = "ACCESS"
LOW_BAND, HIGH_BAND = 12, 30


def key(user: str) -> dict[str, str]:
    return {"pk": f"METER#{user}", "sk": SK}


def band(size: int) -> int:
    """The size band of a file: k with 2^(k-1) < size <= 2^k, clamped to 12..30."""
    return min(HIGH_BAND, max(LOW_BAND, (max(1, size) - 1).bit_length()))


def record(table: Any, user: str, reads: Iterable[int] = (), writes: Iterable[int] = ()) -> None:
    """Count whole-file reads and writes of these sizes (one update, whatever the number)."""
    counts: Counter[str] = Counter()
    for verb, sizes in (("r", reads), ("w", writes)):
        counts.update(f"{verb}{band(s)}" for s in sizes)
    if not counts:
        return
    names = {f"#c{i}": name for i, name in enumerate(counts)}
    values: dict[str, Any] = {f":c{i}": n for i, n in enumerate(counts.values())}
    values[":now"] = int(time.time())
    adds = ", ".join(f"#c{i} :c{i}" for i in range(len(counts)))
    try:
        table.update_item(
            Key=key(user),
            UpdateExpression=f"ADD {adds} SET since = if_not_exists(since, :now)",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
    except (ClientError, BotoCoreError) as err:  # a lost count, never a failed request
        logger.warning("access meter", extra={"user": user, "error": str(err)})


@dataclass(frozen=True)
class Meter:
    """One user's counts since `since` (epoch seconds; None: nothing counted yet)."""

    since: float | None = None
    reads: dict[int, int] = field(default_factory=dict)  # band -> reads
    writes: dict[int, int] = field(default_factory=dict)

    def days(self, now: float) -> float:
        return 0.0 if self.since is None else max(0.0, (now - self.since) / 86400)

    def plus(self, other: Meter) -> Meter:
        """Two users' counts together, measured since the earlier of the two."""
        starts = [s for s in (self.since, other.since) if s is not None]
        return Meter(
            min(starts) if starts else None,
            dict(Counter(self.reads) + Counter(other.reads)),
            dict(Counter(self.writes) + Counter(other.writes)),
        )


def read_meter(table: Any, user: str) -> Meter:
    item = table.get_item(Key=key(user)).get("Item") or {}
    reads: dict[int, int] = {}
    writes: dict[int, int] = {}
    for name, value in item.items():
        if name[:1] in ("r", "w") and name[1:].isdigit():
            (reads if name[0] == "r" else writes)[int(name[1:])] = int(value)
    since = item.get("since")
    return Meter(None if since is None else float(since), reads, writes)
