"""Which service instances hold which blocks."""

from hycloud_core.placement.ring import HashRing, migrate

__all__ = ["HashRing", "migrate"]
