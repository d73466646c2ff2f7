"""Delta upload or direct upload (seed 000 §III-B, eq. 2)."""

from __future__ import annotations

import math


def delta_upload_threshold(r_c: float, r_t: float, gamma_max: float) -> float:
    """Upload rate below which delta upload wins: r_c·r_t·γ_max / (2·r_c + r_t).

    Direct upload of S bytes takes S/r_u. Delta upload computes the delta (S/r_c), uploads what is
    left after elimination ((1-γ)·S/r_u) and moves the file between S3 and EFS twice (2·S/r_t: old
    version in, new version out). Delta upload is faster exactly when r_u is under this threshold.
    """
    for name, rate in (("r_c", r_c), ("r_t", r_t)):
        if not rate > 0 or math.isnan(rate):
            raise ValueError(f"{name} must be a positive rate, got {rate}")
    if not gamma_max > 0:
        return 0.0
    if math.isinf(r_c) and math.isinf(r_t):
        return math.inf
    if math.isinf(r_c):
        return r_t * gamma_max / 2
    if math.isinf(r_t):
        return r_c * gamma_max
    return r_c * r_t * gamma_max / (2 * r_c + r_t)


def should_delta_upload(r_u: float, r_c: float, r_t: float, gamma_max: float) -> bool:
    """True when delta upload beats direct upload to S3 (eq. 2: r_u < r_c·r_t·γ_max / (2·r_c + r_t)).

    r_u: the client's current upload bandwidth to the cloud (bytes/s, its outbound link).
    r_c: the client's delta computation rate (bytes of file processed per second).
    r_t: the measured average S3<->EFS transfer rate in the instance's region (bytes/s).
    gamma_max: the largest elimination ratio the file's adaptive chunk-size state has seen
    (1 - delta/size); 0 or less means delta never helps. All rates in the same unit.
    """
    if not r_u > 0 or math.isnan(r_u):
        raise ValueError(f"r_u must be a positive rate, got {r_u}")
    return r_u < delta_upload_threshold(r_c, r_t, gamma_max)


def delta_seconds(size: int, r_link: float, r_c: float, r_t: float, gamma: float, overhead_s: float) -> float:
    """Time of a delta transfer of `size` bytes in either direction (eq. 2's terms, plus overhead).

    The delta is computed once (S/r_c), what elimination leaves crosses the link ((1-γ)·S/r_link),
    both versions move between S3 and EFS (2·S/r_t), and the job itself costs `overhead_s`
    (start, scheduling, polling): eq. 2 leaves that out, which only matters for small files.
    """
    gamma = min(max(gamma, 0.0), 1.0)
    return overhead_s + size / r_c + (1 - gamma) * size / r_link + 2 * size / r_t


def should_delta_download(
    size: int, r_d: float, r_c: float, r_t: float, gamma: float, overhead_s: float = 0.0
) -> bool:
    """True when a delta download beats a direct one (S/r_d): eq. 2 read for the other direction.

    With `overhead_s` 0 this is exactly eq. 2's test with r_d in place of r_u.
    """
    for name, rate in (("r_d", r_d), ("r_c", r_c), ("r_t", r_t)):
        if not rate > 0 or math.isnan(rate):
            raise ValueError(f"{name} must be a positive rate, got {rate}")
    return delta_seconds(size, r_d, r_c, r_t, gamma, overhead_s) < size / r_d
