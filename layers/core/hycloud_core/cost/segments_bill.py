"""Packed cold small files in a month's bill (docs/SEGMENTS.md), for the layouts with tiers.

A small file over one EFS block and under 128 KiB (`fs.segments` MIN_FILE_BYTES..MAX_FILE_BYTES)
unread for `PACK_AFTER_DAYS` (7) is packed: from then until its next write its data is in an S3 segment under
Intelligent-Tiering, and EFS keeps a stub (inode and one 4 KiB block) in place of its data blocks.
A read leaves it packed (a GET) and brings its segment back to Frequent; only a write puts it back
in EFS. Segments enter Intelligent-Tiering when written, so from the file's 30th unread day the
bytes sit 30 days in Frequent (S3 Standard's price), 60 in Infrequent, then in Archive Instant
Access; over `bill.BANDS` (30-90, 90-180, 180+ days unread) that is half Frequent and half
Infrequent, a third Infrequent and two thirds Archive Instant, then Archive Instant. Rewrites and
deletes leave dead bytes until the cleaner compacts a segment under half live: segments are taken
as `LIVE_SHARE` live on average. Requests: a PUT and a transition per 4 MiB segment written, a GET per read of a
packed file (its EFS read, of the stub, is still charged as a whole small file's: a slight
overcount), monitoring per segment object, and the cleaner's compactions (`compaction_requests`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..fs.segments import MAX_FILE_BYTES, MIN_FILE_BYTES, MIN_LIVE_SHARE, SEGMENT_BYTES
from . import metering as m
from .model import CostBreakdown
from .prices import Prices
from .tiers import ColdShare

DAYS = 30.0  # a billing month (bill.DAYS)
BANDS = (0.0, 30.0, 90.0, 180.0)  # days unread (bill.BANDS)
PACK_AFTER_DAYS = 7.0  # hycloud:segmentAfterDays (infra constructs/segments.py)
LIVE_SHARE = 0.75  # a segment is written whole (1.0) and compacted under 0.5


def band_prices(prices: Prices) -> list[float]:
    """USD per GB-month of segment bytes by the file's days unread (0-30: packed, read lately)."""
    frequent = prices["s3_storage_gb_month"]
    infrequent = prices["s3_int_infrequent_gb_month"]
    instant = prices["s3_int_archive_instant_gb_month"]
    return [frequent, (frequent + infrequent) / 2, (infrequent + 2 * instant) / 3, instant]


def packable(size: int, threshold: int) -> bool:
    return size < threshold and MIN_FILE_BYTES <= size <= MAX_FILE_BYTES


@dataclass
class Packed:
    """One file's packed month: days packed by unread band, packings, reads served by a GET."""

    band_days: list[float] = field(default_factory=lambda: [0.0] * len(BANDS))
    packs: int = 0
    gets: int = 0
    unpacks: int = 0  # writes of the file while packed: its bytes in the segment die


def _add_days(out: Packed, lo: float, hi: float) -> None:
    """Packed from age `lo` to `hi` (days unread, as Intelligent-Tiering sees the segment)."""
    for i, band_start in enumerate(BANDS):
        band_end = BANDS[i + 1] if i + 1 < len(BANDS) else float("inf")
        out.band_days[i] += max(0.0, min(hi, band_end) - max(lo, band_start))


def packed_month(f: Any, pack_after_days: float = PACK_AFTER_DAYS) -> Packed:
    """Walk the file's month: packed once 30 days unread, still packed when read (a read only
    brings its segment back to Frequent), back in EFS on a write. A file last touched 30 days or
    more before the month is taken as packed already."""
    out = Packed()
    touches = sorted([(d, "r") for d in f.reads] + [(d, "w") for d in f.writes])
    last = -f.before if f.before is not None else (min(f.writes) if f.writes else 0.0)
    packed = f.before is not None and f.before >= pack_after_days
    for day, kind in [*touches, (DAYS, "end")]:
        start = max(last, 0.0)
        if day < start:
            continue
        if packed:
            _add_days(out, start - last, day - last)
        elif day - last > pack_after_days:
            packed, out.packs = True, out.packs + 1
            _add_days(out, max(start - last, pack_after_days), day - last)
        if kind == "r":
            out.gets += packed
            last = day
        elif kind == "w":
            out.unpacks += packed
            packed, last = False, day
    return out


def compaction_requests(dead_bytes: float, segment_bytes: int = SEGMENT_BYTES) -> dict[str, float]:
    """The cleaner's requests for `dead_bytes` left in segments (fs/segments.py, docs/SEGMENTS.md):
    a segment is compacted when its live share falls under `MIN_LIVE_SHARE`, so each compaction
    frees about (1 - share) of a segment and copies the share that is live: one GET of the old
    segment, and a PUT and a transition per new segment's worth of live bytes copied. The old
    object's DELETE is free. Counts of requests, not USD (`compaction_lines` prices them)."""
    compactions = dead_bytes / (segment_bytes * (1 - MIN_LIVE_SHARE))
    copied = compactions * segment_bytes * MIN_LIVE_SHARE
    return {"gets": compactions, "puts": copied / segment_bytes, "transitions": copied / segment_bytes}


def compaction_lines(dead_bytes: float, prices: Prices) -> dict[str, float]:
    """USD of `compaction_requests`."""
    n = compaction_requests(dead_bytes)
    return {
        "segment_compaction_gets": n["gets"] * prices["s3_get_per_1000"] / 1000,
        "segment_compaction_puts": n["puts"] * prices["s3_put_per_1000"] / 1000,
        "segment_compaction_transitions": n["transitions"]
        * prices["s3_lifecycle_transition_per_1000"]
        / 1000,
    }


def segment_lines(
    files: Sequence[Any], prices: Prices, threshold: int, pack_after_days: float = PACK_AFTER_DAYS
) -> tuple[dict[str, float], dict[str, float]]:
    """(storage, requests) of the month's packed files: `efs_data` is the EFS saving (negative)."""
    gb, per_band = prices.gb, band_prices(prices)
    stored = efs_saved = packed = byte_months = dead = 0.0
    gets = 0
    for f in files:
        if not packable(f.size, threshold):
            continue
        p = packed_month(f, pack_after_days)
        months = [d / DAYS for d in p.band_days]
        stored += sum(
            f.size / LIVE_SHARE * share * price for share, price in zip(months, per_band, strict=True)
        )
        byte_months += f.size / LIVE_SHARE * sum(months)
        efs_saved += (m.efs_data_bytes(f.size) - m.EFS_BLOCK_BYTES) * sum(months)
        packed += f.size * p.packs
        dead += f.size * p.unpacks
        gets += p.gets
    segments_written = -(-int(packed) // SEGMENT_BYTES)
    storage = {
        "efs_data": -gb(efs_saved) * prices["efs_storage_gb_month"],
        "segment_data": gb(stored),  # bytes x USD per GB-month x months
        "segment_monitoring_data": byte_months / SEGMENT_BYTES * prices["s3_int_monitoring_per_1000"] / 1000,
    }
    requests = {
        "segment_puts": segments_written * prices["s3_put_per_1000"] / 1000,
        "segment_transitions": segments_written * prices["s3_lifecycle_transition_per_1000"] / 1000,
        "segment_gets": gets * prices["s3_get_per_1000"] / 1000,
        **compaction_lines(dead, prices),
    }
    return storage, requests


def packed_storage(sizes: Sequence[int], prices: Prices, threshold: int, cold: ColdShare) -> dict[str, float]:
    """Storage lines of packed files for a size mix under a cold share (no per-file month): the
    share unread 30 days of each packable file is in segments, priced by band as above."""
    per_band = band_prices(prices)
    bands = (
        cold.after_30_days - cold.after_90_days,
        cold.after_90_days - cold.after_180_days,
        cold.after_180_days,
    )
    price = sum(share * p for share, p in zip(bands, per_band[1:], strict=True))
    packable_sizes = [s for s in sizes if packable(s, threshold)]
    in_segments = sum(packable_sizes) * cold.after_30_days / LIVE_SHARE
    blocks = sum(m.efs_data_bytes(s) - m.EFS_BLOCK_BYTES for s in packable_sizes) * cold.after_30_days
    return {
        "efs_data": -prices.gb(blocks) * prices["efs_storage_gb_month"],
        "segment_data": prices.gb(sum(packable_sizes) / LIVE_SHARE) * price,
        "segment_monitoring_data": in_segments / SEGMENT_BYTES * prices["s3_int_monitoring_per_1000"] / 1000,
    }


def with_lines(cost: CostBreakdown, lines: dict[str, float]) -> CostBreakdown:
    """The breakdown with these lines added to its own (a negative line is a saving)."""
    out = dict(cost.lines)
    for line, usd in lines.items():
        out[line] = out.get(line, 0.0) + usd
    return CostBreakdown(cost.layout, out, cost.logical_bytes, cost.billed_bytes)
