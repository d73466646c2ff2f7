"""Adaptively-adjusted chunk size (seed 000 §III-B, Fig. 14).

After each delta download the client measures, in the background, the elimination ratio
γ_i = 1 − Δ_i/S_f of the same (old, new) pair at every candidate chunk size c_i, turns them into a
local probability vector P_loc = γ_i / Σγ, and blends it into the file's vector:
P_new = λ·P_pre + (1 − λ)·P_loc with λ = n/(n+1) on the n-th adjustment (n = 1, 2, ...), starting
from a uniform P. The size with the highest probability is used for the next download of the file.
The state is a small JSON-able dict kept in the file's link-file metadata.

Two definitions of Δ are offered:
- GammaMode.PAPER: Δ = compressed delta bytes, as in the paper. It ignores the checksum list the
  client uploads, so it always prefers the smallest chunks, whose checksum lists are the longest.
- GammaMode.TRAFFIC: Δ = checksum list + compressed delta, the bytes a delta download actually moves.

The client uses PredictiveChunkSize (below): the same measurements and the same traffic γ, but
predicted for the pair at hand from how much the file changed, rather than averaged over past pairs.
bench/delta_bench.py replays all three on real release series.

Candidates: powers of two from 256 B (below that the checksum list outweighs the delta for any
file over a few MiB) to 64 KiB (above that almost every edit dirties a whole block).

First download of a file, before any measurement: DEFAULT_INITIAL (1 KiB). rsync's sqrt(size)
rule (8 KiB for a 64 MiB file) assumes few, clustered edits; archives and source trees change in
many scattered places (every member's header carries an mtime), where 512 B - 2 KiB moves the
fewest bytes (bench/results/delta_adaptive.md, 10 releases per series). Callers with a better prior (e.g. the state of a sibling
file of the same type) pass `initial=`.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, BinaryIO

from .encoder import DEFAULT_LEVEL, delta
from .signature import compute

CANDIDATE_SIZES: tuple[int, ...] = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
DEFAULT_INITIAL = 1024
STATE_VERSION = 1


class GammaMode(StrEnum):
    PAPER = "paper"
    TRAFFIC = "traffic"


@dataclass(frozen=True)
class TrafficSample:
    """What a delta download at one chunk size would move for one (old, new) pair."""

    block_size: int
    file_size: int  # S_f, the new version's size
    signature_bytes: int  # checksum list sent by the client
    delta_bytes: int  # compressed delta received

    @property
    def traffic(self) -> int:
        return self.signature_bytes + self.delta_bytes

    def gamma(self, mode: GammaMode = GammaMode.TRAFFIC) -> float:
        if self.file_size == 0:
            return 0.0
        moved = self.delta_bytes if mode == GammaMode.PAPER else self.traffic
        return 1.0 - moved / self.file_size


class _NullSink:
    def write(self, data: bytes | bytearray) -> int:
        return len(data)


def measure_candidates(
    old: BinaryIO,
    new: BinaryIO,
    sizes: Sequence[int] = CANDIDATE_SIZES,
    strong_len: int | None = None,
    level: int = DEFAULT_LEVEL,
) -> list[TrafficSample]:
    """Signature and delta sizes at every candidate; streams both files once per size, keeps no delta."""
    samples = []
    for size in sizes:
        old.seek(0)
        sig = compute(old, size, strong_len).encode()
        new.seek(0)
        stats = delta(sig, new, _NullSink(), level)
        samples.append(TrafficSample(size, stats.new_size, len(sig), stats.compressed_bytes))
    return samples


def elimination_ratios(samples: Sequence[TrafficSample], mode: GammaMode = GammaMode.TRAFFIC) -> list[float]:
    return [s.gamma(mode) for s in samples]


def _check_covers(samples: Sequence[TrafficSample], sizes: Sequence[int]) -> None:
    if [s.block_size for s in samples] != list(sizes):
        raise ValueError("samples must cover the candidate sizes in order")


def measure_bytes(old: bytes, new: bytes, sizes: Sequence[int] = CANDIDATE_SIZES) -> list[TrafficSample]:
    return measure_candidates(io.BytesIO(old), io.BytesIO(new), sizes)


@dataclass
class AdaptiveChunkSize:
    """The per-file probability vector over candidate chunk sizes."""

    sizes: tuple[int, ...] = CANDIDATE_SIZES
    probabilities: list[float] = field(default_factory=list)
    adjustments: int = 0
    initial: int = DEFAULT_INITIAL
    mode: GammaMode = GammaMode.TRAFFIC
    last_gammas: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sizes = tuple(self.sizes)
        if not self.sizes or list(self.sizes) != sorted(set(self.sizes)) or self.sizes[0] < 1:
            raise ValueError("sizes must be distinct positive integers in increasing order")
        if not self.probabilities:
            self.probabilities = [1.0 / len(self.sizes)] * len(self.sizes)
        if len(self.probabilities) != len(self.sizes):
            raise ValueError("one probability per candidate size")
        if self.initial not in self.sizes:
            raise ValueError(f"initial size {self.initial} is not a candidate")
        self.mode = GammaMode(self.mode)

    @property
    def choice(self) -> int:
        """Chunk size for the next delta download of this file."""
        if self.adjustments == 0:
            return self.initial
        best = max(range(len(self.sizes)), key=lambda i: (self.probabilities[i], -i))
        return self.sizes[best]

    @property
    def gamma_max(self) -> float:
        """Largest elimination ratio of the latest measurement (eq. 2's γ_max); 0 before any."""
        return max(self.last_gammas, default=0.0)

    def update(self, gammas: Sequence[float]) -> list[float]:
        """Blend in one measurement of γ per candidate; returns the new probability vector."""
        if len(gammas) != len(self.sizes):
            raise ValueError("one elimination ratio per candidate size")
        clipped = [max(0.0, float(g)) for g in gammas]
        total = sum(clipped)
        local = [g / total for g in clipped] if total > 0 else [1.0 / len(clipped)] * len(clipped)
        n = self.adjustments + 1
        lam = n / (n + 1)
        self.probabilities = [lam * p + (1 - lam) * q for p, q in zip(self.probabilities, local, strict=True)]
        self.adjustments = n
        self.last_gammas = [float(g) for g in gammas]
        return self.probabilities

    def choose(self, old_size: int, new_size: int) -> int:
        """Same interface as PredictiveChunkSize; the plain vector ignores the sizes."""
        return self.choice

    def learn(self, samples: Sequence[TrafficSample], old_size: int, new_size: int) -> None:
        self.observe(samples)

    def observe(self, samples: Sequence[TrafficSample]) -> list[float]:
        _check_covers(samples, self.sizes)
        return self.update(elimination_ratios(samples, self.mode))

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "sizes": list(self.sizes),
            "probabilities": list(self.probabilities),
            "adjustments": self.adjustments,
            "initial": self.initial,
            "mode": str(self.mode),
            "last_gammas": list(self.last_gammas),
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> AdaptiveChunkSize:
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"unsupported adaptive state version {state.get('version')!r}")
        return cls(
            sizes=tuple(int(s) for s in state["sizes"]),
            probabilities=[float(p) for p in state["probabilities"]],
            adjustments=int(state["adjustments"]),
            initial=int(state["initial"]),
            mode=GammaMode(state["mode"]),
            last_gammas=[float(g) for g in state.get("last_gammas", [])],
        )


MIN_CHANGE = 512  # bytes: a version whose size did not move still changed somewhere
BETA_PRIOR = 0.5  # elasticity of delta size to change size until two measurements exist
HISTORY = 8  # measurements kept per file (the state lives in the file's link-file metadata)


@dataclass(frozen=True)
class Measurement:
    """One background measurement: how big the change was and what each candidate moved."""

    old_size: int
    new_size: int
    signature_bytes: tuple[int, ...]
    delta_bytes: tuple[int, ...]

    @property
    def change(self) -> int:
        return change(self.old_size, self.new_size)

    @property
    def gamma_max(self) -> float:
        """The best traffic γ of this measurement."""
        best = min(map(sum, zip(self.signature_bytes, self.delta_bytes, strict=True)))
        return max(0.0, 1.0 - best / self.new_size) if self.new_size else 0.0


def change(old_size: int, new_size: int) -> int:
    """How much a file changed, as far as the client can tell before asking for a delta."""
    return abs(new_size - old_size) + MIN_CHANGE


@dataclass
class PredictiveChunkSize:
    """The traffic γ, predicted for the download at hand instead of averaged over past ones.

    The traffic of a delta download at chunk size c is the checksum list plus the compressed delta.
    The list's length is known before asking: it is a property of the copy the client holds (scaled
    from the last measurement by that copy's size). The delta is not; it grows with how much the file
    changed, which the client knows only roughly, as the change in size (its copy vs the link file).
    So the predicted delta at c is the running mean (λ = n/(n+1), the paper's blend) of past deltas
    at c, each scaled by (change now / change then)^β, with β fitted on the file's own history
    (log of the best delta against log of the change, clipped to [0, 1]; BETA_PRIOR before two
    measurements). The size with the highest predicted γ = 1 − traffic/S_f is chosen.

    Why: a series of releases alternates small patch releases (few edits, 4-8 KiB chunks win) and
    large ones (many edits, 512 B - 1 KiB win); any average over past versions picks the wrong size
    for one kind or the other. β learns how strongly a file's deltas follow its size changes: about
    1 for typescript, about 0 for Django sdists, whose deltas are dominated by every tar header's new
    mtime whatever changed. bench/delta_bench.py replays it beside the paper's vectors.
    """

    sizes: tuple[int, ...] = CANDIDATE_SIZES
    initial: int = DEFAULT_INITIAL
    history: list[Measurement] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sizes = tuple(self.sizes)
        if self.initial not in self.sizes:
            raise ValueError(f"initial size {self.initial} is not a candidate")

    def elasticity(self) -> float:
        """β: slope of log(best delta) over log(change) across the history."""
        xs = [math.log(m.change) for m in self.history]
        ys = [math.log(max(1, min(m.delta_bytes))) for m in self.history]
        if len(xs) < 2:
            return BETA_PRIOR
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        var = sum((x - mx) ** 2 for x in xs)
        if var < 1e-12:
            return BETA_PRIOR
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var
        return min(1.0, max(0.0, slope))

    def predict(self, old_size: int, new_size: int) -> list[float]:
        """Expected traffic at every candidate for this (old, new) pair; empty without history."""
        if not self.history:
            return []
        now, beta = change(old_size, new_size), self.elasticity()
        last = self.history[-1]
        scale = old_size / last.old_size if last.old_size else 1.0
        weights = [(now / m.change) ** beta for m in self.history]
        return [
            last.signature_bytes[i] * scale
            + sum(w * m.delta_bytes[i] for w, m in zip(weights, self.history, strict=True)) / len(weights)
            for i in range(len(self.sizes))
        ]

    def choose(self, old_size: int, new_size: int) -> int:
        predicted = self.predict(old_size, new_size)
        if not predicted:
            return self.initial
        return self.sizes[min(range(len(self.sizes)), key=lambda i: (predicted[i], i))]

    def learn(self, samples: Sequence[TrafficSample], old_size: int, new_size: int) -> None:
        _check_covers(samples, self.sizes)
        self.history.append(
            Measurement(
                old_size=old_size,
                new_size=new_size,
                signature_bytes=tuple(s.signature_bytes for s in samples),
                delta_bytes=tuple(s.delta_bytes for s in samples),
            )
        )
        del self.history[:-HISTORY]

    @property
    def gamma_max(self) -> float:
        """eq. 2's γ_max: the best traffic γ of the latest measurement."""
        return self.history[-1].gamma_max if self.history else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "kind": "predictive",
            "initial": self.initial,
            "sizes": list(self.sizes),
            "history": [
                [m.old_size, m.new_size, list(m.signature_bytes), list(m.delta_bytes)] for m in self.history
            ],
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> PredictiveChunkSize:
        """Restores a stored state; any other kind (an older client's vectors) starts afresh."""
        if state.get("version") != STATE_VERSION or state.get("kind") != "predictive":
            return cls()
        sizes = tuple(int(s) for s in state["sizes"])
        history = [
            Measurement(int(old), int(new), tuple(int(x) for x in sig), tuple(int(x) for x in dl))
            for old, new, sig, dl in state["history"]
        ]
        if any(len(m.signature_bytes) != len(sizes) or len(m.delta_bytes) != len(sizes) for m in history):
            raise ValueError("one signature and one delta size per candidate")
        return cls(sizes=sizes, initial=int(state["initial"]), history=history[-HISTORY:])
