"""The zstd level of a version-aware delta, chosen per transfer by eq. 2.

Only two of eq. 2's terms move with the level: the compression time (size / rate at that level)
and the delta crossing the link (delta bytes / link rate). The chosen level minimises their sum
(plus the RTT, the same for every level): a slow link buys fewer bytes with CPU, a fast one does not.
Both terms scale with the size, so the choice itself depends on the size only through the cap.

A table gives, per level, the compression rate of patch-from (bytes of the new version per second)
and the delta's size relative to level 3's. DEFAULT_TABLE's rates were measured on OpenSSL 3.5.4 ->
3.5.5 (34 MB .tar, 1.44 MB delta at level 3) on a 2-core machine, and stand for the cloud's CPU;
its ratios are the medians over four release pairs (typescript 5.8.3 -> 5.9.2 -> 5.9.3, OpenSSL
3.5.2 -> 3.5.4 -> 3.5.5: level 19 sent 0.48-0.81 of level 3's bytes, level 12 0.57-1.08). A client
scales its rates by how fast a small probe runs on its own CPU (`speed`, `scaled`); the ratios stay
the table's (they are the data's, not the machine's).

The cloud's CPU budget (`cap`): a level in [MIN_LEVEL, MAX_LEVEL] (19: zstd's ultra levels need
hundreds of MB more memory), lowered to the highest table level whose estimated compression time
fits CPU_BUDGET of the delta job's timeout (90 s of the 900 s job).
"""

from __future__ import annotations

import io
import random
import statistics
import time
from dataclasses import dataclass

MIN_LEVEL, MAX_LEVEL, DEFAULT_LEVEL = 1, 19, 3
JOB_TIMEOUT_S = 900  # the delta function's timeout (infra: python_function "Delta")
CPU_BUDGET = 0.1  # of JOB_TIMEOUT_S: the most a job's compression may be estimated to take
BUDGET_S = CPU_BUDGET * JOB_TIMEOUT_S
# γ of a version-aware delta at level 3 until the client has measured one: consecutive releases of
# typescript and OpenSSL (bench/level_bench.py) eliminated 0.958-0.994 of the bytes; the rsync-style
# 0.9 (auto.GAMMA) would count 5x the bytes on the link and pick levels whose CPU does not pay
GAMMA = 0.98


@dataclass(frozen=True)
class LevelCost:
    rate: float  # bytes of the new version compressed per second at this level (patch-from)
    ratio: float  # the delta's size at this level / its size at level 3


Table = dict[int, LevelCost]

DEFAULT_TABLE: Table = {
    1: LevelCost(131e6, 1.047),
    3: LevelCost(132e6, 1.0),
    6: LevelCost(74e6, 0.937),
    9: LevelCost(36e6, 0.886),
    12: LevelCost(25e6, 0.851),
    15: LevelCost(1.6e6, 0.842),
    19: LevelCost(0.8e6, 0.67),
}

# Probe rates (bytes/s) of `probe_rates` on the machine that measured DEFAULT_TABLE; a client's own
# probe rate over these scales the table's rate at that level.
REFERENCE_PROBE: dict[int, float] = {
    1: 380e6,
    3: 250e6,
    6: 130e6,
    9: 45e6,
    12: 55e6,
    15: 6.5e6,
    19: 3e6,
}
PROBE = 256 * 1024
PROBE_RUNS = 3  # about 0.3 s in all on the reference machine


def cost(level: int, table: Table) -> LevelCost:
    """The table's entry for `level`, else the next listed level above it (slower: conservative)."""
    above = [lv for lv in sorted(table) if lv >= level]
    return table[above[0] if above else max(table)]


def total_seconds(
    level: int, size: int, link_rate: float, rtt: float, table: Table, gamma: float = GAMMA
) -> float:
    """Eq. 2's level-dependent part: compress `size` bytes, send the delta, one round trip."""
    c = cost(level, table)
    return size / c.rate + size * (1 - gamma) * c.ratio / link_rate + rtt


def choose(
    size: int, link_rate: float, rtt: float = 0.0, table: Table = DEFAULT_TABLE, gamma: float = GAMMA
) -> int:
    """The table level with the least total time (the lower level on a tie)."""
    return min(sorted(table), key=lambda lv: (total_seconds(lv, size, link_rate, rtt, table, gamma), lv))


def valid(level: int) -> bool:
    return isinstance(level, int) and not isinstance(level, bool) and MIN_LEVEL <= level <= MAX_LEVEL


def cap(level: int, size: int, table: Table = DEFAULT_TABLE, budget_s: float = BUDGET_S) -> int:
    """The level the cloud runs for a request of `level`: the asked one when its estimated
    compression time fits the budget, else the highest lower table level that does (level 1 at worst)."""
    if not valid(level):
        raise ValueError(f"zstd level must be an integer in [{MIN_LEVEL}, {MAX_LEVEL}], not {level!r}")
    if size / cost(level, table).rate <= budget_s:
        return level
    fitting = [lv for lv in table if lv < level and size / table[lv].rate <= budget_s]
    return max(fitting, default=MIN_LEVEL)


def probe_pair(size: int = PROBE) -> tuple[bytes, bytes]:
    """A text-like old version and a new one with scattered edits and insertions, like a release."""
    rng = random.Random(7)
    words = [bytes(rng.choices(b"abcdefghijklmnopqrstuvwxyz_", k=rng.randint(2, 10))) for _ in range(2000)]
    text = bytearray()
    while len(text) < size:
        text += b" ".join(rng.choices(words, k=12)) + b";\n"
    old = bytes(text[:size])
    new = bytearray(old)
    for _ in range(64):
        at = rng.randrange(len(new) - 200)
        new[at : at + rng.randint(0, 80)] = b" ".join(rng.choices(words, k=rng.randint(1, 12)))
    return old, bytes(new)


def probe_rates(levels: list[int] | None = None) -> dict[int, float]:
    """This machine's patch-from compression rate per level on the probe pair."""
    from . import versioned

    old, new = probe_pair()
    rates = {}
    for lv in levels or sorted(REFERENCE_PROBE):
        best = float("inf")
        for _ in range(PROBE_RUNS):  # the fastest run: the CPU's rate, not a neighbour's burst
            started = time.perf_counter()
            versioned.encode(io.BytesIO(old), len(old), io.BytesIO(new), len(new), io.BytesIO(), level=lv)
            best = min(best, time.perf_counter() - started)
        rates[lv] = len(new) / max(best, 1e-6)
    return rates


def speed(probe: dict[int, float]) -> float:
    """This machine's CPU against the reference's: the median over levels of probe rate over the
    reference's (one factor: a single level's probe on a shared machine varies twofold)."""
    factors = [probe[lv] / REFERENCE_PROBE[lv] for lv in probe if lv in REFERENCE_PROBE and probe[lv] > 0]
    return statistics.median(factors) if factors else 1.0


def scaled(factor: float, table: Table = DEFAULT_TABLE) -> Table:
    """`table` with every rate multiplied by `factor` (`speed` of this machine)."""
    return {lv: LevelCost(c.rate * factor, c.ratio) for lv, c in table.items()}
