"""The small-file threshold a deployment (or one user) chooses from its own measured mix.

The mix is what the table holds: each file's size and age (its record) and the reads and writes
per size band (cost/access_meter.py). It becomes next month as the bill sees it (`bill.Month`):
every file held all month, each band's measured rate of reads and writes spread evenly over its
files and days. Every candidate threshold is priced with the bill the bench uses
(`bill.candidate_bills`: EFS by tier with its access charges, segments, S3 storage by
Intelligent-Tiering's rule and its requests, the controller calls), a file being small when its
size is at most the threshold, as the controller decides.

Guard rails, in order:
- the range: candidates are powers of two from 4 KiB (one EFS block: a smaller file in S3 still
  keeps a link file EFS meters as much) to 4 MiB (a small file is one controller request, and
  base64 of 4 MiB is inside Lambda's 6 MB);
- enough measured: at least `min_files` files and `min_days` of metering, else the threshold in
  force stays;
- hysteresis: the cheapest candidate (ties go to the one nearest the threshold in force) replaces
  the threshold in force only if it saves at least `switch_share` (5%) of the month's bill there
  and the saving repays moving the files between the two within `payback_months` (3);
- per user: a user gets a threshold of their own only where the deployment's is not theirs, and
  theirs saves `switch_share` of their bill at the deployment's; they keep it while it saves half
  that, and otherwise follow the deployment again.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..constants import KiB, MiB
from ..content import PART_SIZE
from .access_meter import Meter, band
from .bill import DAYS, FileMonth, Month, candidate_bills
from .model import Assumptions
from .prices import Prices

MIN_THRESHOLD, MAX_THRESHOLD = 4 * KiB, 4 * MiB
CANDIDATES = tuple(1 << k for k in range(12, 23))  # 4 KiB .. 4 MiB
MAX_SAMPLE_FILES = 10_000  # priced per candidate: a deployment's choice stays within seconds


@dataclass(frozen=True)
class Guard:
    min_files: int = 1000
    min_days: float = 7.0
    switch_share: float = 0.05
    payback_months: float = 3.0

    @classmethod
    def from_event(cls, o: dict[str, Any] | None) -> Guard:
        o, d = o or {}, cls()
        return cls(
            min_files=max(0, int(o.get("min_files", d.min_files))),
            min_days=max(0.0, float(o.get("min_days", d.min_days))),
            switch_share=max(0.0, float(o.get("switch_share", d.switch_share))),
            payback_months=max(0.0, float(o.get("payback_months", d.payback_months))),
        )


def clamp(threshold: int) -> int:
    return min(MAX_THRESHOLD, max(MIN_THRESHOLD, threshold))


@dataclass(frozen=True)
class Mix:
    """What was measured: (size, age in days) of each file, and the meter's counts."""

    files: Sequence[tuple[int, float]]
    meter: Meter = field(default_factory=Meter)
    measured_days: float = 0.0

    def rates(self) -> tuple[dict[int, float], dict[int, float]]:
        """Reads and writes per month by band; a first month's counts are taken as a month's."""
        scale = DAYS / max(DAYS, self.measured_days)
        return (
            {b: n * scale for b, n in self.meter.reads.items()},
            {b: n * scale for b, n in self.meter.writes.items()},
        )

    def summary(self) -> dict[str, Any]:
        reads, writes = self.rates()
        return {
            "files": len(self.files),
            "bytes": sum(s for s, _ in self.files),
            "measured_days": round(self.measured_days, 2),
            "reads_per_month": round(sum(reads.values()), 1),
            "writes_per_month": round(sum(writes.values()), 1),
        }


def _spread(count: float, n: int, i: int) -> int:
    """The i-th of n files' share of `count` events, whole numbers adding up to round(count)."""
    total = round(count)
    return (i + 1) * total // n - i * total // n


def _days(k: int) -> tuple[float, ...]:
    return tuple((j + 0.5) * DAYS / k for j in range(k))


def month_of(mix: Mix) -> tuple[Month, float]:
    """Next month for the mix, from a sample of at most MAX_SAMPLE_FILES files; and the factor
    that scales the sample's bill to the whole mix."""
    reads, writes = mix.rates()
    by_band: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for size, age in sorted(mix.files):
        by_band[band(size)].append((size, age))
    step = max(1, math.ceil(len(mix.files) / MAX_SAMPLE_FILES))
    files: list[FileMonth] = []
    for b, members in by_band.items():
        sample = members[::step]
        share = len(sample) / len(members)
        r, w = reads.get(b, 0.0) * share, writes.get(b, 0.0) * share
        for i, (size, age) in enumerate(sample):
            nr, nw = _spread(r, len(sample), i), _spread(w, len(sample), i)
            files.append(FileMonth(size, before=max(0.0, age), reads=_days(nr), writes=_days(nw)))
    scale = len(mix.files) / len(files) if files else 1.0
    return Month(files), scale


def bills(mix: Mix, prices: Prices, candidates: Sequence[int] = CANDIDATES) -> dict[int, float]:
    """Each candidate's month for the mix, USD (a file of the threshold's size is small)."""
    month, scale = month_of(mix)
    walked = month.walked()
    plus_one = candidate_bills(
        walked, month, prices, Assumptions(relayed_share=0.0), [t + 1 for t in candidates]
    )
    return {t - 1: usd * scale for t, usd in plus_one.items()}


def move_cost(mix: Mix, prices: Prices, a: int, b: int) -> float:
    """USD to move once the files between thresholds a and b: a PUT (or GET) per part, the bytes
    read from (or written to) EFS, two record writes each."""
    lo, hi = sorted((a, b))
    moved = [s for s, _ in mix.files if lo < s <= hi]
    to_s3 = b < a
    per_part = prices["s3_put_per_1000" if to_s3 else "s3_get_per_1000"] / 1000
    efs = prices["efs_elastic_read_gb" if to_s3 else "efs_elastic_write_gb"]
    parts = sum(max(1, -(-s // PART_SIZE)) for s in moved)
    writes = 2 * len(moved) * prices["dynamodb_write_per_million"] / 1e6
    return parts * per_part + prices.gb(sum(moved)) * efs + writes


@dataclass(frozen=True)
class Choice:
    """A threshold chosen (or kept), with the figures behind it."""

    threshold: int
    previous: int
    best: int
    bills: dict[int, float]
    move_cost: float
    reason: str

    @property
    def changed(self) -> bool:
        return self.threshold != self.previous

    def saving(self, against: int) -> float:
        return self.bills.get(against, 0.0) - self.bills.get(self.threshold, 0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "previous": self.previous,
            "best": self.best,
            "bills": {str(t): round(usd, 8) for t, usd in self.bills.items()},
            "move_cost": round(self.move_cost, 8),
            "reason": self.reason,
        }


def _mib(t: int) -> str:
    return f"{t / MiB:g} MiB" if t >= MiB else f"{t // KiB} KiB"


def _nearest_cheapest(priced: dict[int, float], current: int) -> int:
    least = min(priced.values())
    tied = [t for t, usd in priced.items() if usd <= least * (1 + 1e-9) + 1e-12]
    return min(tied, key=lambda t: (abs(math.log2(t) - math.log2(current)), t))


def choose(mix: Mix, prices: Prices, current: int, guard: Guard | None = None) -> Choice:
    """The threshold for `mix` given the one in force (`current`), by the rules above."""
    g = guard or Guard()
    current = clamp(current)
    if len(mix.files) < g.min_files or mix.measured_days < g.min_days:
        why = (
            f"kept {_mib(current)}: {len(mix.files)} files over {mix.measured_days:.1f} days measured "
            f"(a choice needs {g.min_files} files and {g.min_days:g} days)"
        )
        return Choice(current, current, current, {}, 0.0, why)
    priced = bills(mix, prices, sorted({*CANDIDATES, current}))
    best = _nearest_cheapest(priced, current)
    saving = priced[current] - priced[best]
    moving = move_cost(mix, prices, current, best)
    if best == current:
        why = f"{_mib(current)} is the cheapest for this mix (${priced[current]:.6f}/month)"
        return Choice(current, current, best, priced, 0.0, why)
    pays = saving >= g.switch_share * priced[current] and saving * g.payback_months >= moving
    figures = (
        f"{_mib(best)} bills ${priced[best]:.6f}/month against ${priced[current]:.6f} at {_mib(current)}; "
        f"moving the files between costs ${moving:.6f}"
    )
    if pays:
        return Choice(best, current, best, priced, moving, f"chose {_mib(best)}: {figures}")
    why = f"kept {_mib(current)}: {figures} (a change needs {g.switch_share:.0%} saved, repaid in {g.payback_months:g} months)"
    return Choice(current, current, best, priced, moving, why)


def choose_for_user(
    mix: Mix, prices: Prices, deployment: int, own: int | None, guard: Guard | None = None
) -> Choice | None:
    """A user's own threshold, or None where they follow the deployment's (the module's rule)."""
    g = guard or Guard()
    picked = choose(mix, prices, own if own is not None else deployment, g)
    if not picked.bills:  # too little measured: what the user had stays
        return None if own is None else picked
    if picked.threshold == deployment:
        return None
    if deployment not in picked.bills:
        picked = replace(picked, bills={**picked.bills, **bills(mix, prices, [deployment])})
    there = picked.bills[deployment]
    keep = g.switch_share / 2 if picked.threshold == own else g.switch_share
    return picked if picked.saving(deployment) >= keep * there else None
