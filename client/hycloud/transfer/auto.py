"""Which way a large file moves (`--via auto`): direct, relay, or a delta, by eq. 2 with measured rates.

The rates are the client's own: its download and upload rates from recent transfers, its delta
computation rate measured once on this machine, the S3<->EFS rate the delta jobs report, and the
overhead of a delta job as the client last saw it. Until measured, each has the paper's value.
"""

from __future__ import annotations

import io
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path

from hycloud_core.delta import level as zlevel
from hycloud_core.delta.decision import delta_seconds

from ..versions import VersionStore
from . import background

LINK = 50e6 / 8  # the paper's client link, 50 Mbit/s, until measured
S3_EFS = 100 * 2**20
OVERHEAD_S = 1.0  # a delta job's start-to-result time until measured
MIN_OVERHEAD_S = 0.1  # a job costs at least a request and a state machine's start
GAMMA = 0.9  # elimination expected of a new version against the previous one until measured
PROBE = 4 * 2**20


@dataclass(frozen=True)
class Rates:
    down: float
    up: float
    relay_down: float | None
    compute: float
    s3_efs: float
    overhead_s: float
    gamma: float


def compute_rate(store: VersionStore) -> float:
    """This machine's delta computation rate (checksum list + delta), measured once and kept."""
    cached = store.rate("compute")
    if cached:
        return cached
    rng = random.Random(1)
    old = rng.randbytes(PROBE)
    new = bytearray(old)
    for _ in range(16):  # scattered edits, like a new release
        at = rng.randrange(PROBE - 64)
        new[at : at + 64] = rng.randbytes(64)
    from hycloud_core.delta import delta as rsync_delta  # the engine, loaded when first used
    from hycloud_core.delta.sync import signature

    started = time.perf_counter()
    rsync_delta(signature(io.BytesIO(old), 4096), io.BytesIO(bytes(new)), io.BytesIO())
    rate = PROBE / max(time.perf_counter() - started, 1e-6)
    store.add_rate("compute", rate)
    return rate


def rates(store: VersionStore, s3_efs: float | None = None) -> Rates:
    return Rates(
        down=store.rate("down") or LINK,
        up=store.rate("up") or LINK,
        relay_down=store.rate("relay_down"),
        compute=compute_rate(store),
        s3_efs=store.rate("s3_efs") or s3_efs or S3_EFS,
        overhead_s=store.rate("overhead_s") or OVERHEAD_S,
        gamma=store.rate("gamma") or GAMMA,
    )


def upload_pays(size: int, delta_size: int, r: Rates) -> bool:
    """Eq. 2 with the delta already computed: its measured γ, plus the job's overhead."""
    gamma = 1 - delta_size / size if size else 0.0
    return delta_seconds(size, r.up, r.compute, r.s3_efs, gamma, r.overhead_s) < size / r.up


def learn_job(
    store: VersionStore, size: int, delta_size: int, result: dict, job_seconds: float, direction: str
) -> None:
    """Keep what a finished delta job taught: γ, the S3<->EFS rate it reports, its overhead.

    The overhead is the job's start-to-result time less what eq. 2 charges on its own for work done
    inside it: both S3<->EFS moves, and the delta's computation (`down`: in the cloud) or the delta
    crossing the link (`up`: sent with the job's request). Kept whole, those would count twice.
    """
    if size:
        store.add_rate("gamma", max(1 - delta_size / size, 1e-3))
    if result.get("s3_efs_rate"):
        store.add_rate("s3_efs", result["s3_efs_rate"])
    r = rates(store)
    inside = size / r.compute if direction == "down" else delta_size / r.up
    store.add_rate("overhead_s", max(job_seconds - 2 * size / r.s3_efs - inside, MIN_OVERHEAD_S))


def level_table(store: VersionStore) -> zlevel.Table:
    """The per-level compression table for this machine: the default one's rates scaled by how
    fast a small probe runs here, measured once (about 0.3 s) and kept."""
    speed = store.rate("zstd_speed")
    if not speed:
        speed = zlevel.speed(zlevel.probe_rates())
        store.add_rate("zstd_speed", speed)
    return zlevel.scaled(speed)


def chosen_level(endpoint: str, direction: str, size: int, link_rate: float | None = None) -> int:
    """The zstd level of a version-aware delta by eq. 2 from the measured link rate and γ of
    `endpoint`: compressed here for an upload (this machine's table), in the cloud for a download
    (the default table, which stands for the cloud's CPU). Rates are the endpoint's whoever the user."""
    store = VersionStore(endpoint, "")
    up = direction == "up"
    link = link_rate or store.rate("up" if up else "down") or LINK
    table = level_table(store) if up else zlevel.DEFAULT_TABLE
    return zlevel.choose(size, link, 0.0, table, store.rate("gamma") or zlevel.GAMMA)


def signature_block(size: int) -> int:
    """rsync's choice, about √size, as a power of two in [1 KiB, 64 KiB]: a list of ~√size sums."""
    return min(max(1 << max(int(math.isqrt(max(size, 1))).bit_length() - 1, 0), 1024), 65536)


def remember(
    store: VersionStore, remote: str, content_hash: str, local: Path, chunk_state: dict | None = None
) -> None:
    """Record that `local` holds `content_hash` (and the file's chunk-size state, when the cloud
    named it: a later rsync-style download chooses its block without asking); its checksum list is
    added from the background (a later `put` of the edited file sends a delta against it)."""
    if not store.enabled:
        return
    store.remember(remote, content_hash, local, None, chunk_state)
    st = local.stat()

    def run() -> None:
        from hycloud_core.delta.sync import signature

        try:
            with open(local, "rb") as f:
                sig = signature(f, signature_block(st.st_size))
            now = local.stat()
        except OSError:
            return
        if (now.st_mtime_ns, now.st_size) == (st.st_mtime_ns, st.st_size):  # unchanged meanwhile
            store.set_signature(remote, content_hash, sig)

    background.later("hycloud-remember", run, timeout=600.0)
