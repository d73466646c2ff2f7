"""Seeded download burst shared by the scheduling and relay simulations.

Seed 000 evaluates both mechanisms on the first ten minutes of a day of the Xuanfeng trace:
2,002 file downloads, sizes from about 5 KB to 4 GB. The trace is not public, so we draw a
burst of the same count and span:

* arrivals: a Poisson process conditioned on 2,002 events in 600 s (sorted uniform times);
* sizes: the shape file-size studies agree on — a lognormal body with a Pareto tail
  (Downey, "The structural cause of file size distributions", MASCOTS 2001; Agrawal et al.,
  "A five-year study of file-system metadata", FAST 2007). Body: lognormal with median
  512 KiB and σ = 2.0 (central 90 % from about 19 KiB to 13 MiB). Tail: with probability
  5 %, Pareto with x_m = 32 MiB and α = 1.3, cut at 4 GiB like the trace. Sizes below 5 KB
  are raised to 5 KB, the trace's smallest.

The mean is 8-12 MB depending on the seed (10.8 MB, 21.7 GB in all at seed 0), several times
what a 50 Mbit/s link moves in ten minutes: a backlog builds, which is the situation Fig. 19 and
20 study. The trace itself (an offline-download service, video-heavy) likely has larger files;
``sim_fop.py`` therefore also sweeps the link rate, which is the same as scaling all sizes.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

BURST_FILES = 2002
BURST_SECONDS = 600.0
BODY_MEDIAN = 512 * 1024
BODY_SIGMA = 2.0
TAIL_PROB = 0.05
TAIL_XM = 32 * 1024 * 1024
TAIL_ALPHA = 1.3
MIN_SIZE = 5_000
MAX_SIZE = 4 * 1024**3
LARGE_FILE = 2 * 1024 * 1024  # the small/large threshold S̄_f


@dataclass(frozen=True)
class Request:
    op_id: str
    path: str
    arrival: float  # seconds from the start of the burst
    size: int  # bytes


def file_size(rng: random.Random) -> int:
    if rng.random() < TAIL_PROB:
        size = TAIL_XM / (1.0 - rng.random()) ** (1.0 / TAIL_ALPHA)
    else:
        size = rng.lognormvariate(math.log(BODY_MEDIAN), BODY_SIGMA)
    return int(min(max(size, MIN_SIZE), MAX_SIZE))


def download_burst(seed: int = 0, count: int = BURST_FILES, span: float = BURST_SECONDS) -> list[Request]:
    rng = random.Random(seed)
    arrivals = sorted(rng.uniform(0.0, span) for _ in range(count))
    return [
        Request(f"r{i:05d}", f"/ns/u{rng.randrange(200):03d}/d{i % 37}/file{i:05d}", t, file_size(rng))
        for i, t in enumerate(arrivals)
    ]


def describe(burst: list[Request]) -> dict[str, float]:
    sizes = sorted(r.size for r in burst)
    total = sum(sizes)
    return {
        "files": len(burst),
        "total_bytes": total,
        "mean_bytes": total / len(sizes),
        "median_bytes": sizes[len(sizes) // 2],
        "p99_bytes": sizes[int(0.99 * (len(sizes) - 1))],
        "max_bytes": sizes[-1],
        "large_files": sum(s >= LARGE_FILE for s in sizes),
        "span_s": burst[-1].arrival - burst[0].arrival,
    }
