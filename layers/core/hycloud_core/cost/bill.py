"""A month's whole bill in each layout, from what each file held and went through that month.

Each file is a `FileMonth`: its size, how long before the month it was last read or written, and
the days of the month it was read and written. From those alone follow, for every layout, the
storage by tier (EFS Standard / IA / Archive after 30 and 180 days unread; S3 Intelligent-Tiering
Frequent / Infrequent / Archive Instant after 30 and 90 days; Amazon S3 Files' file-system copy of
data written in the last 30 days), the month's tier moves, cold reads and Archive's 90-day
minimum, and the operations priced by `model.operations_cost` (requests, Lambda, Step Functions,
DynamoDB, EFS throughput, egress). Files under 128 KiB never leave a standard tier.

A bill has five groups: storage, requests, compute (Lambda and Step Functions), dynamodb and
transfer. Its unit price is every group but transfer over the logical bytes: egress to users is the
same bytes in every layout, so it is shown apart, as is the deployment's fixed monthly cost
(`idle.py`), which does not grow with the data.

Layouts: "hybrid" (today: 2 MiB threshold, no tiers), "hybrid-tiers" (the same with EFS lifecycle
and Intelligent-Tiering, infra constructs/storage_tiers.py, and cold small files packed into S3
segments, `segments_bill.py`), "hybrid-tiers-chosen" (tiers at the
threshold `tiers.choose_threshold` picks for the month's own access rates), "hybrid-tiers-mix" (tiers
at the threshold whose whole bill is the lowest for this month's files: `cheapest_threshold`, the
threshold a deployment chooses from its own measured mix, cost/threshold_choice.py, files already
stored then moved by the upkeep, fs/threshold_moves.py), "all-s3" (S3 Standard),
"all-s3-tiers" (every object of 128 KiB and more in Intelligent-Tiering) and "s3-files".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..constants import MiB
from ..content import PART_SIZE
from . import metering as m
from .model import (
    Assumptions,
    CostBreakdown,
    Operations,
    all_s3_cost,
    monthly_cost,
    operations_cost,
    s3_files_cost,
)
from .prices import Prices
from .segments_bill import segment_lines, with_lines
from .tiers import ColdShare, FileAccess, choose_threshold, tiered_cost
from .usage import usage_from_sizes

DAYS = 30.0  # a billing month
BANDS = (0.0, 30.0, 90.0, 180.0)  # days unread at which a tier starts (EFS uses 30 and 180, S3 IT 30 and 90)
ARCHIVE_MINIMUM_DAYS = 90.0  # EFS Archive bills at least this long
GROUPS = ("storage", "requests", "compute", "dynamodb", "transfer")
COMPUTE = ("lambda_requests", "lambda_duration", "step_functions")
TRANSFER = ("egress", "inter_region")
LAYOUTS = (
    "hybrid",
    "hybrid-tiers",
    "hybrid-tiers-chosen",
    "hybrid-tiers-mix",
    "all-s3",
    "all-s3-tiers",
    "s3-files",
)
# thresholds a deployment may choose per mix: from one EFS block to a part, where the bill turns
CANDIDATE_THRESHOLDS = tuple(1 << k for k in range(12, 24))  # 4 KiB .. 8 MiB


@dataclass(frozen=True)
class FileMonth:
    """One file over the month. `before`: days since its last read or write when the month starts
    (None: it is first written this month, at `writes[0]`); `reads`, `writes`: days into the month."""

    size: int
    before: float | None
    reads: tuple[float, ...] = ()
    writes: tuple[float, ...] = ()


@dataclass
class Timeline:
    """What one file's month comes to: days in each unread band, band crossings, cold accesses."""

    band_days: list[float] = field(default_factory=lambda: [0.0] * len(BANDS))
    crossed: list[int] = field(default_factory=lambda: [0] * len(BANDS))  # moves into each band
    read_in_band: list[int] = field(default_factory=lambda: [0] * len(BANDS))  # reads by band
    archive_early_days: float = 0.0  # Archive's minimum left unused when the file is touched


def _band(age: float) -> int:
    return max(i for i, start in enumerate(BANDS) if age >= start)


def timeline(f: FileMonth) -> Timeline:
    """Walk the file's accesses: between two, its unread age grows through the bands."""
    t = Timeline()
    touches = sorted([(d, "r") for d in f.reads] + [(d, "w") for d in f.writes])
    last = -f.before if f.before is not None else (min(f.writes) if f.writes else 0.0)
    for day, kind in [*touches, (DAYS, "end")]:
        start = max(last, 0.0)
        if day < start:
            continue
        lo, hi = start - last, day - last
        for i, band_start in enumerate(BANDS):
            band_end = BANDS[i + 1] if i + 1 < len(BANDS) else float("inf")
            t.band_days[i] += max(0.0, min(hi, band_end) - max(lo, band_start))
            if i and lo <= band_start < hi:  # unread that long inside this stretch: it moves down
                t.crossed[i] += 1
        if kind != "end":
            if kind == "r":
                t.read_in_band[_band(hi)] += 1
            if BANDS[3] <= hi < BANDS[3] + ARCHIVE_MINIMUM_DAYS:
                t.archive_early_days += BANDS[3] + ARCHIVE_MINIMUM_DAYS - hi
            last = day
    return t


@dataclass(frozen=True)
class Bill:
    layout: str
    lines: dict[str, dict[str, float]]  # group -> line -> USD for the month
    logical_bytes: int
    threshold: int | None = None

    def group(self, name: str) -> float:
        return sum(self.lines.get(name, {}).values())

    @property
    def total(self) -> float:
        return sum(self.group(g) for g in GROUPS)

    def unit_price(self, prices: Prices) -> float:
        """USD per GB-month of logical data: storage, requests, compute and DynamoDB (not egress)."""
        return (self.total - self.group("transfer")) / prices.gb(self.logical_bytes)

    def to_dict(self, prices: Prices) -> dict[str, Any]:
        return {
            "layout": self.layout,
            "threshold": self.threshold,
            "groups": {g: round(self.group(g), 6) for g in GROUPS},
            "lines": {g: {k: round(v, 6) for k, v in lines.items()} for g, lines in self.lines.items()},
            "unit_price_gb_month": self.unit_price(prices),
        }


def _group(line: str) -> str:
    if line in COMPUTE:
        return "compute"
    if line in TRANSFER:
        return "transfer"
    return "dynamodb" if line.startswith("dynamodb") else "requests"


@dataclass(frozen=True)
class _Walked:
    files: list[FileMonth]
    lines: list[Timeline]


def _share(walked: _Walked, keep: Callable[[FileMonth], bool]) -> ColdShare:
    """Byte-weighted shares of the kept tierable files' month in each band (moves charged apart)."""
    days = [0.0] * len(BANDS)
    for f, t in zip(walked.files, walked.lines, strict=True):
        if f.size >= m.MIN_TIERED_BYTES and keep(f):
            for i, d in enumerate(t.band_days):
                days[i] += f.size * d
    total = sum(days)
    if not total:
        return ColdShare(0.0, 0.0, 0.0, months_held=float("inf"))
    return ColdShare(sum(days[1:]) / total, sum(days[2:]) / total, days[3] / total, months_held=float("inf"))


def operations(walked: _Walked, threshold: int, metadata_ops: int = 0) -> Operations:
    """The month's uploads and downloads, split at `threshold` into small and large."""
    n: dict[str, int] = {}
    for f in walked.files:
        kind = "small" if f.size < threshold else "large"
        for verb, count in (("upload", len(f.writes)), ("download", len(f.reads))):
            n[f"{kind}_{verb}s"] = n.get(f"{kind}_{verb}s", 0) + count
            n[f"{kind}_{verb}_bytes"] = n.get(f"{kind}_{verb}_bytes", 0) + count * f.size
    return Operations(metadata_ops=metadata_ops, **n)


def _tier_lines(walked: _Walked, prices: Prices, threshold: int) -> dict[str, float]:
    """EFS moves into IA and Archive, cold reads, Archive's minimum; S3 transitions into IT."""
    gb, ia, archive = prices.gb, 1, 3
    moved = ia_read = archive_read = 0.0
    archive_in = early = 0.0
    transitions = 0
    for f, t in zip(walked.files, walked.lines, strict=True):
        if f.size < m.MIN_TIERED_BYTES:
            continue
        if f.size >= threshold:
            transitions += len(f.writes)  # each written content enters Intelligent-Tiering once
            continue
        data = m.efs_data_bytes(f.size)
        moved += data * t.crossed[ia]
        archive_in += data * t.crossed[archive]
        ia_read += f.size * (t.read_in_band[1] + t.read_in_band[2])
        archive_read += f.size * t.read_in_band[archive]
        early += data * t.archive_early_days / DAYS
    return {
        "efs_tiering": gb(moved) * prices["efs_ia_tiering_gb"]
        + gb(archive_in) * prices["efs_archive_tiering_gb"],
        "efs_cold_reads": gb(ia_read) * prices["efs_ia_read_gb"]
        + gb(archive_read) * prices["efs_archive_read_gb"],
        "efs_archive_minimum": gb(early) * prices["efs_archive_storage_gb_month"],
        "s3_transitions": transitions * prices["s3_lifecycle_transition_per_1000"] / 1000,
    }


def _bill(layout: str, storage: CostBreakdown, ops: dict[str, float], threshold: int | None = None) -> Bill:
    lines: dict[str, dict[str, float]] = {g: {} for g in GROUPS}
    lines["storage"] = {k: v for k, v in storage.lines.items() if not k.startswith("dynamodb")}
    lines["dynamodb"] = {k: v for k, v in storage.lines.items() if k.startswith("dynamodb")}
    for line, usd in ops.items():
        lines[_group(line)][line] = lines[_group(line)].get(line, 0.0) + usd
    return Bill(layout, lines, storage.logical_bytes, threshold)


@dataclass(frozen=True)
class Month:
    """The files of a namespace over one month, walked once for every layout."""

    files: Sequence[FileMonth]
    dirs: int = 1
    metadata_ops: int = 0

    def walked(self) -> _Walked:
        files = list(self.files)
        return _Walked(files, [timeline(f) for f in files])

    def access(self, walked: _Walked) -> FileAccess:
        """Reads and writes per file and month, and the cold share: what the threshold is chosen for."""
        count = max(1, len(walked.files))
        return FileAccess(
            reads_per_month=sum(len(f.reads) for f in walked.files) / count,
            writes_per_month=sum(len(f.writes) for f in walked.files) / count,
            cold=_share(walked, lambda f: True),
        )


def _hybrid(walked: _Walked, month: Month, prices: Prices, threshold: int, tiers: bool) -> CostBreakdown:
    usage = usage_from_sizes([f.size for f in walked.files], threshold, dirs=month.dirs)
    if not tiers:
        return monthly_cost(usage, prices)
    efs = _share(walked, lambda f: f.size < threshold)
    s3 = _share(walked, lambda f: f.size >= threshold)
    return tiered_cost(usage, prices, efs, s3_cold=s3)


def _all_s3_tiers(walked: _Walked, prices: Prices) -> CostBreakdown:
    """Every file one object; those of 128 KiB and more in Intelligent-Tiering."""
    usage = usage_from_sizes([f.size for f in walked.files], threshold=0)  # every file an object
    storage = tiered_cost(usage, prices, ColdShare.none(), s3_cold=_share(walked, lambda f: True))
    lines = {k: v for k, v in storage.lines.items() if k.startswith("s3")}
    return CostBreakdown("all-s3-tiers", lines, storage.logical_bytes)


def _s3_files_recent(walked: _Walked) -> int:
    """Bytes of files of 128 KiB and more that S3 Files holds on file-system storage, month-averaged.

    Writes land there and stay for its expiry window (30 days by default); reads of such files are
    streamed from the bucket. In a steady month that is each written byte held for one month.
    """
    return sum(f.size * len(f.writes) for f in walked.files if f.size >= m.S3FILES_IMPORT_THRESHOLD)


def _hybrid_bill(
    layout: str, walked: _Walked, month: Month, prices: Prices, t: int, tiers: bool, a: Assumptions
) -> Bill:
    """HyCloud's bill at small-file threshold `t`, with or without the storage tiers and segments."""
    ops = operations_cost(operations(walked, t, month.metadata_ops), prices, "hybrid", a)
    storage = _hybrid(walked, month, prices, t, tiers)
    if tiers:
        packed, requests = segment_lines(walked.files, prices, t)
        ops = {**ops, **_tier_lines(walked, prices, t), **requests}
        storage = with_lines(storage, packed)
    return _bill(layout, storage, ops, t)


def candidate_bills(
    walked: _Walked,
    month: Month,
    prices: Prices,
    a: Assumptions,
    candidates: Sequence[int] = CANDIDATE_THRESHOLDS,
) -> dict[int, float]:
    """Each candidate threshold's bill for this month's files with tiers (storage, requests,
    compute, DynamoDB; egress is the same at any threshold), USD. A file is small below it."""

    def unit(t: int) -> float:
        bill = _hybrid_bill("hybrid-tiers-mix", walked, month, prices, t, True, a)
        return bill.total - bill.group("transfer")

    return {t: unit(t) for t in candidates}


def cheapest_threshold(
    walked: _Walked,
    month: Month,
    prices: Prices,
    a: Assumptions,
    candidates: Sequence[int] = CANDIDATE_THRESHOLDS,
) -> int:
    """The candidate threshold at which HyCloud with tiers bills this month's files least.
    `tiers.choose_threshold` judges one file at average rates; this prices the mix itself, its
    one-block files, segments and reads included. A deployment chooses from its own measured
    month with the same bills and guard rails on top (cost/threshold_choice.py)."""
    bills = candidate_bills(walked, month, prices, a, candidates)
    return min(bills, key=lambda t: bills[t])


def month_bills(
    month: Month,
    prices: Prices,
    threshold: int = 2 * MiB,
    assumptions: Assumptions | None = None,
) -> dict[str, Bill]:
    """Every layout's bill for the month (`threshold`: HyCloud's small-file threshold today)."""
    a = assumptions or Assumptions(relayed_share=0.0)
    walked = month.walked()
    chosen = choose_threshold(prices, month.access(walked))
    bills = {
        "hybrid": _hybrid_bill("hybrid", walked, month, prices, threshold, False, a),
        "hybrid-tiers": _hybrid_bill("hybrid-tiers", walked, month, prices, threshold, True, a),
        "hybrid-tiers-chosen": _hybrid_bill("hybrid-tiers-chosen", walked, month, prices, chosen, True, a),
    }
    mix = cheapest_threshold(walked, month, prices, a)
    bills["hybrid-tiers-mix"] = _hybrid_bill("hybrid-tiers-mix", walked, month, prices, mix, True, a)
    plain = usage_from_sizes([f.size for f in walked.files], threshold=PART_SIZE + 1)
    s3_ops = operations_cost(operations(walked, PART_SIZE + 1, month.metadata_ops), prices, "all-s3")
    bills["all-s3"] = _bill("all-s3", all_s3_cost(plain, prices), s3_ops)
    tiered_ops = {**s3_ops, **_tier_lines(walked, prices, 0)}
    bills["all-s3-tiers"] = _bill("all-s3-tiers", _all_s3_tiers(walked, prices), tiered_ops)
    files_ops = operations_cost(
        operations(walked, m.S3FILES_IMPORT_THRESHOLD, month.metadata_ops), prices, "s3-files"
    )
    storage = s3_files_cost(plain, prices, recently_read_bytes=_s3_files_recent(walked))
    bills["s3-files"] = _bill("s3-files", storage, files_ops)
    return bills
