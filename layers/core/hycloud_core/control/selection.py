"""Which instances serve a client (seed 000 §III-B, after [17]).

Instances whose measured latency is within +10% of the client's lowest are its service
instances; they hold the erasure-coded blocks of its large files. The lowest one is the
optimal instance and hosts the client's namespace in EFS.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_TOLERANCE = 0.10


@dataclass(frozen=True)
class ServiceInstances:
    optimal: str
    instances: tuple[str, ...]  # ordered by latency, optimal first


def select_service_instances(
    latencies: Mapping[str, float], tolerance: float = DEFAULT_TOLERANCE
) -> ServiceInstances:
    """Pick the service instances from ``{instance: latency}``; ties break by name."""
    if not latencies:
        raise ValueError("no latency measurements")
    if any(v < 0 for v in latencies.values()):
        raise ValueError("latency cannot be negative")
    ordered = sorted(latencies, key=lambda name: (latencies[name], name))
    limit = latencies[ordered[0]] * (1.0 + tolerance)
    chosen = tuple(name for name in ordered if latencies[name] <= limit)
    return ServiceInstances(optimal=chosen[0], instances=chosen)
