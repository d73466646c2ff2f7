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
- GammaMode.TRAFFIC (default): Δ = checksum list + compressed delta, the bytes a delta download
  actually moves. bench/delta_bench.py shows why it is the default.

Candidates: powers of two from 256 B (below that the checksum list outweighs the delta for any
file over a few MiB) to 64 KiB (above that almost every edit dirties a whole block).

First download of a file, before any measurement: DEFAULT_INITIAL (1 KiB). rsync's sqrt(size)
rule (8 KiB for a 64 MiB file) assumes few, clustered edits; archives and source trees change in
many scattered places (every member's header carries an mtime), where 512 B - 2 KiB moves the
fewest bytes (bench/results/delta.md). Callers with a better prior (e.g. the state of a sibling
file of the same type) pass `initial=`.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import BinaryIO

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
    def write(self, data) -> int:
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
        """Same interface as ChangeAwareChunkSize; the plain vector ignores the sizes."""
        return self.choice

    def learn(self, samples: Sequence[TrafficSample], old_size: int, new_size: int) -> None:
        self.observe(samples)

    def observe(self, samples: Sequence[TrafficSample]) -> list[float]:
        if [s.block_size for s in samples] != list(self.sizes):
            raise ValueError("samples must cover the candidate sizes in order")
        return self.update(elimination_ratios(samples, self.mode))

    def to_dict(self) -> dict:
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
    def from_dict(cls, state: dict) -> AdaptiveChunkSize:
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


CHANGE_THRESHOLD = 0.001  # relative size change that separates small edits from large ones


@dataclass
class ChangeAwareChunkSize:
    """The paper's mechanism kept per kind of change: one probability vector for versions whose size
    moved by less than CHANGE_THRESHOLD (patch releases: few, scattered edits, large chunks win) and
    one for larger changes (many edits, small chunks win).

    The client knows both sizes before it asks for a delta (its own copy and the link file), so it
    picks the vector of the kind of change at hand; a kind not seen yet uses the initial size.
    bench/delta_bench.py replays it beside the plain vectors on typescript and Django.
    """

    classes: dict[str, AdaptiveChunkSize] = field(default_factory=dict)
    initial: int = DEFAULT_INITIAL
    mode: GammaMode = GammaMode.TRAFFIC
    sizes: tuple[int, ...] = CANDIDATE_SIZES

    @staticmethod
    def kind(old_size: int, new_size: int) -> str:
        change = abs(new_size - old_size) / max(old_size, 1)
        return "small" if change < CHANGE_THRESHOLD else "large"

    def choose(self, old_size: int, new_size: int) -> int:
        state = self.classes.get(self.kind(old_size, new_size))
        return state.choice if state else self.initial

    def learn(self, samples: Sequence[TrafficSample], old_size: int, new_size: int) -> None:
        kind = self.kind(old_size, new_size)
        state = self.classes.setdefault(
            kind, AdaptiveChunkSize(sizes=self.sizes, initial=self.initial, mode=self.mode)
        )
        state.observe(samples)

    @property
    def gamma_max(self) -> float:
        return max((s.gamma_max for s in self.classes.values()), default=0.0)

    def to_dict(self) -> dict:
        return {
            "version": STATE_VERSION,
            "kind": "change-aware",
            "initial": self.initial,
            "mode": str(self.mode),
            "sizes": list(self.sizes),
            "classes": {k: v.to_dict() for k, v in self.classes.items()},
        }

    @classmethod
    def from_dict(cls, state: dict) -> ChangeAwareChunkSize:
        if state.get("kind") != "change-aware":  # a plain vector from an older client: start from it
            plain = AdaptiveChunkSize.from_dict(state)
            return cls(classes={"large": plain}, initial=plain.initial, mode=plain.mode, sizes=plain.sizes)
        return cls(
            classes={k: AdaptiveChunkSize.from_dict(v) for k, v in state["classes"].items()},
            initial=int(state["initial"]),
            mode=GammaMode(state["mode"]),
            sizes=tuple(int(s) for s in state["sizes"]),
        )
