"""How the client moves file bytes: one frozen set of settings, passed from the SDK down.

The defaults are what the client always used; a caller changes one (`replace(config, workers=2)`
or `TransferConfig(workers=2)`) without touching module globals, and two clients in one process
may differ. Sizes that are part of the protocol (an upload's 8 MiB parts, hashed into the content
hash) are not settings: they live in hycloud_core.content.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from hycloud_core import content

Timeout = float | tuple[float, float]  # seconds, or (connect, read) as requests takes them


@dataclass(frozen=True)
class TransferConfig:
    """Parallelism, piece sizes, timeouts and retries of presigned (and relay) transfers."""

    workers: int = (
        8  # parts or blocks in flight at once, per file (direct and coded uploads, direct downloads)
    )
    relay_workers: int = 4  # ranged reads of the EFS relay cache in flight at once, through the API
    streams_per_instance: int = 4  # concurrent block GETs per instance (coded): keeps a thin link full
    files: int = 4  # files (or bundles) in flight at once in tree operations (`--transfers`)
    part_size: int = content.PART_SIZE  # a direct download's ranged read (and resume unit)
    relay_piece: int = 4 * 1024 * 1024  # a relay download's ranged read
    part_timeout: Timeout = 300  # one part's PUT or one ranged GET of a direct transfer
    block_timeout: Timeout = (10, 120)  # a coded block: an instance that does not answer loses its blocks
    stage_timeout: Timeout = 600  # a staged checksum list, delta or bundle, one PUT or GET of all of it
    attempts: int = 4  # tries of one part's PUT or one piece's GET (the first included)
    block_attempts: int = 3  # tries of one coded block's PUT (the first included)
    backoff_s: float = 0.2  # the wait before the second try; doubled before each later one
    backoff_max_s: float = 5.0  # no wait between tries is longer
    jitter: float = 0.5  # each wait is cut by a random share up to this, so workers do not retry in step

    def __post_init__(self) -> None:
        counts = ("workers", "relay_workers", "streams_per_instance", "files", "attempts", "block_attempts")
        for name in counts:
            if getattr(self, name) < 1:
                raise ValueError(f"TransferConfig.{name} must be at least 1")
        if self.part_size < 1 or self.relay_piece < 1:
            raise ValueError("TransferConfig piece sizes must be positive")
        if self.backoff_s < 0 or self.backoff_max_s < 0 or not 0 <= self.jitter <= 1:
            raise ValueError("TransferConfig backoff must be non-negative, jitter within [0, 1]")

    def backoff(self, retry: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number `retry` (0: the second try): exponential, capped,
        with jitter."""
        wait = min(self.backoff_max_s, self.backoff_s * 2**retry)
        return wait * (1 - self.jitter * (rng or random).random())


DEFAULT = TransferConfig()
