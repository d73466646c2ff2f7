"""Online bandwidth estimate per instance and direction (seed 000 eq. 4).

Network conditions are stable over short horizons, so the rate of the next transfer is
predicted from the last K <= 5 transfers of the current period. The harmonic mean is the
right average for rates: it equals total bytes over total time when the transfers are of
equal size, and one lucky fast transfer cannot inflate it. With no transfer in the period the
last periodic test-file measurement stands in.

State is kept as integers (bytes/s, milliseconds) so that ``to_dict`` can be written to
DynamoDB as-is (boto3 rejects Python floats) and read back without loss.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

MAX_SAMPLES = 5
DEFAULT_PERIOD_S = 300.0


class Direction(StrEnum):
    """The two legs of a relay download."""

    S3_TO_EFS = "t"  # BW^t in eq. 5
    EFS_TO_CLIENT = "d"  # BW^d in eq. 5 (also a coded download straight from the instance's bucket)
    CLIENT_TO_INSTANCE = "u"  # uploads to the instance: a figure for it before any download


def harmonic_mean(rates: Iterable[float]) -> float:
    """K / sum(1/r); every rate must be positive."""
    values = list(rates)
    if not values:
        raise ValueError("harmonic mean of no rates")
    if any(r <= 0 for r in values):
        raise ValueError("rates must be positive")
    return len(values) / sum(1.0 / r for r in values)


@dataclass
class BandwidthEstimator:
    """Rate estimate of one link (one instance, one direction)."""

    period_s: float = DEFAULT_PERIOD_S
    max_samples: int = MAX_SAMPLES
    samples: list[tuple[int, int]] = field(default_factory=list)  # (time ms, bytes/s)
    probe: tuple[int, int] | None = None  # last test-file measurement (time ms, bytes/s)

    def record_transfer(self, now: float, nbytes: int, seconds: float) -> None:
        """Add a finished transfer; only the newest ``max_samples`` are kept."""
        if nbytes <= 0 or seconds <= 0:
            return
        self.samples.append((_ms(now), max(1, round(nbytes / seconds))))
        del self.samples[: -self.max_samples]

    def record_probe(self, now: float, rate: float) -> None:
        """Store the periodic test-file measurement (bytes/s)."""
        self.probe = (_ms(now), max(1, round(rate)))

    def estimate(self, now: float) -> float | None:
        """Bytes/s to expect now, or None when the link was never measured."""
        horizon = _ms(now - self.period_s)
        recent = [rate for t, rate in self.samples if t >= horizon]
        if recent:
            return harmonic_mean(recent)
        return float(self.probe[1]) if self.probe else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "period_ms": _ms(self.period_s),
            "max_samples": self.max_samples,
            "samples": [[t, r] for t, r in self.samples],
            "probe": list(self.probe) if self.probe else None,
        }

    @classmethod
    def from_dict(cls, item: Mapping[str, Any]) -> BandwidthEstimator:
        probe = item.get("probe")
        return cls(
            period_s=int(item["period_ms"]) / 1000,
            max_samples=int(item["max_samples"]),
            samples=[(int(t), int(r)) for t, r in item.get("samples", [])],
            probe=(int(probe[0]), int(probe[1])) if probe else None,
        )


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


@dataclass
class InstanceBandwidth:
    """Both legs of one service instance; one DynamoDB item per instance."""

    instance: str
    links: dict[Direction, BandwidthEstimator] = field(
        default_factory=lambda: {d: BandwidthEstimator() for d in Direction}
    )

    def record_transfer(self, direction: Direction, now: float, nbytes: int, seconds: float) -> None:
        self.links[direction].record_transfer(now, nbytes, seconds)

    def record_probe(self, direction: Direction, now: float, rate: float) -> None:
        self.links[direction].record_probe(now, rate)

    def estimate(self, direction: Direction, now: float) -> float | None:
        return self.links[direction].estimate(now)

    def to_dict(self) -> dict[str, Any]:
        return {"instance": self.instance, **{d.value: self.links[d].to_dict() for d in Direction}}

    @classmethod
    def from_dict(cls, item: Mapping[str, Any]) -> InstanceBandwidth:
        links = {
            d: BandwidthEstimator.from_dict(item[d.value]) if d.value in item else BandwidthEstimator()
            for d in Direction
        }
        return cls(instance=str(item["instance"]), links=links)
