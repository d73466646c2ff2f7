"""What a user's transfers measured per instance, kept in the table (seed 000 eq. 4, §III-B).

Record `BW#<user>` / `<instance>`: the client-link estimator of control/bandwidth.py (the last
K <= 5 rates; its harmonic mean is the estimate) and the lowest round trip of recent transfers.
The service instances (within +10% of the lowest latency) and the optimal one follow from them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from boto3.dynamodb.conditions import Key

from ..control.bandwidth import Direction, InstanceBandwidth
from ..control.selection import select_service_instances
from ..errors import BadRequestError
from .records import query_all

MAX_LATENCIES = 5
ENV_MAX_LINK_BPS = "HYCLOUD_MAX_LINK_BPS"
ENV_MIN_MEASURE_S = "HYCLOUD_MIN_MEASURE_S"
DEFAULT_MAX_LINK_BPS = 10e9 / 8  # 10 Gbit/s: more than any client link the deployment serves
DEFAULT_MIN_MEASURE_S = 1e-3  # below a millisecond a timer measures noise, not a link


@dataclass(frozen=True)
class Plausible:
    """What a measurement may claim: a rate no faster than a link can go, over a duration long
    enough to mean something (deployment settings `hycloud:maxLinkBps`, `hycloud:minMeasureS`).

    A claimed rate steers the scheduler (a user's t_T, so its queue place, and the instance its
    downloads are planned from), so an absurd one (2^50 bytes in a microsecond) is refused
    rather than clamped. The bytes cannot be checked against the transfers they came from: a
    sample names no transfer, and the transfers it measures go to presigned S3 URLs the API never
    sees; the rate bound is what bounds the bytes (bytes <= max rate x seconds).
    """

    max_bps: float = DEFAULT_MAX_LINK_BPS
    min_seconds: float = DEFAULT_MIN_MEASURE_S

    @classmethod
    def from_environment(cls) -> Plausible:
        return cls(
            max_bps=float(os.environ.get(ENV_MAX_LINK_BPS) or DEFAULT_MAX_LINK_BPS),
            min_seconds=float(os.environ.get(ENV_MIN_MEASURE_S) or DEFAULT_MIN_MEASURE_S),
        )

    def check(self, sample: Sample) -> None:
        """400 `implausible-measurement` when no link could have measured `sample`."""
        if not sample.seconds >= self.min_seconds:
            raise BadRequestError(
                f"a measurement must last at least {self.min_seconds} s (got {sample.seconds})",
                code="implausible-measurement",
            )
        if sample.nbytes <= 0 or sample.nbytes / sample.seconds > self.max_bps:
            raise BadRequestError(
                f"{sample.nbytes} bytes in {sample.seconds} s is faster than the {self.max_bps:.0f} "
                "bytes/s any link here can carry",
                code="implausible-measurement",
            )


@dataclass(frozen=True)
class Sample:
    instance: str
    nbytes: int
    seconds: float
    rtt_ms: float | None = None
    kind: str = "download"  # "upload", or "probe" (a small read where no transfer gave a figure)


class Measurements:
    def __init__(self, table: Any, user: str) -> None:
        self.table, self.user = table, user

    def _load(self) -> dict[str, dict[str, Any]]:
        items = query_all(self.table, Key("pk").eq(f"BW#{self.user}"), consistent=True)
        return {item["sk"]: item for item in items}

    def record(
        self, samples: Iterable[Sample], now: float | None = None, bounds: Plausible | None = None
    ) -> None:
        """Add one transfer's samples; each instance keeps its last K rates and round trips.
        Nothing is recorded when any sample is implausible (400)."""
        now = time.time() if now is None else now
        samples = list(samples)
        bounds = bounds or Plausible.from_environment()
        for sample in samples:
            bounds.check(sample)
        items = self._load()
        for sample in samples:
            item = items.get(sample.instance)
            links = (
                InstanceBandwidth.from_dict(_ints(item["links"]))
                if item
                else InstanceBandwidth(sample.instance)
            )
            if sample.kind == "probe":
                links.record_probe(Direction.EFS_TO_CLIENT, now, sample.nbytes / sample.seconds)
            else:
                leg = Direction.CLIENT_TO_INSTANCE if sample.kind == "upload" else Direction.EFS_TO_CLIENT
                links.record_transfer(leg, now, sample.nbytes, sample.seconds)
            rtts = [int(v) for v in item.get("rtt_ms", [])] if item else []
            if sample.rtt_ms is not None:
                rtts = [*rtts, max(0, round(sample.rtt_ms))][-MAX_LATENCIES:]
            items[sample.instance] = {"links": links.to_dict(), "rtt_ms": rtts}
            self.table.put_item(
                Item={
                    "pk": f"BW#{self.user}",
                    "sk": sample.instance,
                    "links": links.to_dict(),
                    "rtt_ms": rtts,
                }
            )

    def view(self, instances: Iterable[str], now: float | None = None) -> dict[str, Any]:
        """Estimates (bytes/s, None if never measured), latencies, service and optimal instance."""
        now = time.time() if now is None else now
        items = self._load()
        estimates, latencies, sources = {}, {}, {}
        for name in instances:
            item = items.get(name)
            links = InstanceBandwidth.from_dict(_ints(item["links"])) if item else None
            estimates[name], sources[name] = _estimate(links, now) if links else (None, None)
            if item and item.get("rtt_ms"):
                latencies[name] = float(min(int(v) for v in item["rtt_ms"]))
        service = select_service_instances(latencies) if latencies else None
        return {
            "estimates": estimates,
            "measured_by": sources,
            "latencies_ms": latencies,
            "service_instances": list(service.instances) if service else [],
            "optimal": service.optimal if service else None,
        }


def _estimate(links: InstanceBandwidth, now: float) -> tuple[float | None, str | None]:
    """Downloads first (what the planner predicts), else uploads to the instance, else a probe."""
    download = links.links[Direction.EFS_TO_CLIENT]
    horizon = now - download.period_s
    if any(t / 1000 >= horizon for t, _ in download.samples):
        return download.estimate(now), "download"
    upload = links.estimate(Direction.CLIENT_TO_INSTANCE, now)
    if upload is not None:
        return upload, "upload"
    probe = download.estimate(now)  # no recent download sample: the probe, if any
    return probe, ("probe" if probe is not None else None)


def _ints(doc: Any) -> Any:
    """DynamoDB hands numbers back as Decimal; the estimator wants ints."""
    if isinstance(doc, dict):
        return {k: _ints(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_ints(v) for v in doc]
    if doc is None or isinstance(doc, str | bool):
        return doc
    return int(doc)
