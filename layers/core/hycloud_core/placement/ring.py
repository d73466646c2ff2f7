"""Consistent-hash ring over a client's service instances (seed 000, §III-B; Karger et al.).

Each instance (named by its region, e.g. ``"eu-west-1"``) owns `vnodes` points
on a 64-bit ring. A chunk's n blocks go to the first n distinct instances met
walking clockwise from the chunk key's point, so adding or removing one of N
instances changes about 1/N of all block placements, and the blocks that do
move go only to the new instance (or only leave the removed one).

Points come from xxh3-64 of fixed strings, never from Python's ``hash()``, so
every process, Lambda or client computes the same placement.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

import xxhash

DEFAULT_VNODES = 160


def _point(data: bytes) -> int:
    return xxhash.xxh3_64_intdigest(data)


def key_point(key: bytes | str) -> int:
    """Ring position of a chunk key (a sha256 hex string or raw digest)."""
    return _point(key.encode() if isinstance(key, str) else key)


class HashRing:
    """n-of-N placement with virtual nodes; cheap to rebuild, so add/remove simply rebuild."""

    def __init__(self, instances: Iterable[str] = (), vnodes: int = DEFAULT_VNODES) -> None:
        if vnodes < 1:
            raise ValueError("vnodes must be at least 1")
        self.vnodes = vnodes
        self._instances: set[str] = set()
        for instance in instances:
            self._check_name(instance)
            self._instances.add(instance)
        self._rebuild()

    @staticmethod
    def _check_name(instance: str) -> None:
        if not instance or "\x00" in instance:
            raise ValueError(f"bad instance id {instance!r}")

    def _rebuild(self) -> None:
        points = sorted(
            (_point(f"{instance}\x00{i}".encode()), instance)
            for instance in self._instances
            for i in range(self.vnodes)
        )
        self._points = [p for p, _ in points]
        self._owners = [owner for _, owner in points]
        self._orders: dict[int, tuple[str, ...]] = {}

    @property
    def instances(self) -> tuple[str, ...]:
        return tuple(sorted(self._instances))

    def __len__(self) -> int:
        return len(self._instances)

    def __contains__(self, instance: object) -> bool:
        return instance in self._instances

    def add(self, instance: str) -> None:
        self._check_name(instance)
        if instance not in self._instances:
            self._instances.add(instance)
            self._rebuild()

    def remove(self, instance: str) -> None:
        if instance not in self._instances:
            raise KeyError(instance)
        self._instances.discard(instance)
        self._rebuild()

    def place(self, key: bytes | str, n: int) -> list[str]:
        """The n distinct instances for a chunk, in block order (block i -> result[i])."""
        if not 1 <= n <= len(self._instances):
            raise ValueError(f"cannot place {n} blocks on {len(self._instances)} instances")
        start = bisect.bisect_left(self._points, key_point(key)) % len(self._points)
        return list(self._order_from(start)[:n])

    def _order_from(self, start: int) -> tuple[str, ...]:
        """All instances in clockwise order from a ring point, memoised per point."""
        order = self._orders.get(start)
        if order is None:
            seen: dict[str, None] = {}
            total, size, i = len(self._instances), len(self._owners), start
            while len(seen) < total:
                seen.setdefault(self._owners[i], None)
                i = (i + 1) % size
            order = self._orders[start] = tuple(seen)
        return order


def migrate(current: Sequence[str], target: Sequence[str]) -> list[str]:
    """Where each block should live after the ring changed, moving as few blocks as possible.

    `current[i]` holds block i today and `target` is the new ring placement of
    the chunk. Blocks on instances still in `target` stay; the others fill the
    target instances left over, in ring order.
    """
    if len(current) != len(target):
        raise ValueError("current and target placements differ in length")
    keep = set(current) & set(target)
    free = iter(t for t in target if t not in keep)
    return [c if c in keep else next(free) for c in current]
