"""Deployment settings with documented defaults: explicit argument > environment variable > default."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from . import constants as c

VERSION_RETENTION_S = 30 * 86400
TRASH_RETENTION_S = 30 * 86400


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


@dataclass(frozen=True)
class InstanceConfig:
    """What a cloud function needs to know about its instance; read once at import time."""

    bucket: str = field(default_factory=lambda: os.environ.get(c.ENV_BUCKET, ""))
    table: str = field(default_factory=lambda: os.environ.get(c.ENV_TABLE, ""))
    efs_root: str = field(default_factory=lambda: os.environ.get(c.ENV_EFS_ROOT, "/mnt/efs"))
    relay_state_machine: str = field(default_factory=lambda: os.environ.get(c.ENV_RELAY_STATE_MACHINE, ""))
    small_file_threshold: int = field(default_factory=lambda: _env_int(c.ENV_SMALL_FILE_THRESHOLD, 2 * c.MiB))
    # the configured threshold always wins (the operator fixed it); otherwise it is where the upkeep
    # starts from, and it chooses by cost from the measured mix (cost/thresholds.py)
    small_file_threshold_fixed: bool = field(
        default_factory=lambda: os.environ.get(c.ENV_SMALL_FILE_THRESHOLD_FIXED, "").lower() in ("1", "true")
    )
    # with three or more instances, files larger than this are erasure-coded unless the client says
    # otherwise (docs/GEO.md: where multi-source downloads start to pay; 0 turns the default off)
    coded_threshold: int = field(default_factory=lambda: _env_int(c.ENV_CODED_THRESHOLD, 64 * c.MiB))
    # the largest coded file one controller request decodes (share links, the web app, a delta base)
    # within API Gateway's 29 s; set it from the rate the deployment's controller decodes at
    coded_inline_bytes: int = field(default_factory=lambda: _env_int(c.ENV_CODED_INLINE_BYTES, 512 * c.MiB))
    relay_cache_bytes: int = field(default_factory=lambda: _env_int(c.ENV_RELAY_CACHE_BYTES, 1 * c.GiB))
    delta_state_machine: str = field(default_factory=lambda: os.environ.get(c.ENV_DELTA_STATE_MACHINE, ""))
    # a version replaced by an overwrite or a delete is kept this long: listed and restorable
    # (fs/history.py), and a large one a base of version-aware deltas (30 days; 0 keeps none)
    version_retention_s: int = field(
        default_factory=lambda: _env_int(c.ENV_VERSION_RETENTION_S, VERSION_RETENTION_S)
    )
    # what `rm` and `rm -r` move into a user's trash is purged by upkeep this long after (fs/trash.py);
    # a user's own setting (`hycloud admin set-trash-retention`) wins
    trash_retention_s: int = field(
        default_factory=lambda: _env_int(c.ENV_TRASH_RETENTION_S, TRASH_RETENTION_S)
    )
    # the collector reclaims content and removes temporary files only this long after their last use;
    # longer than any operation (API calls end within 30 s, leases within 60 s)
    gc_grace_s: int = field(default_factory=lambda: _env_int(c.ENV_GC_GRACE_S, 3600))
    # S3↔EFS transfer rate (bytes/s) told to clients for the delta-upload rule (eq. 2) until measured
    s3_efs_rate: int = field(default_factory=lambda: _env_int(c.ENV_S3_EFS_RATE, 100 * c.MiB))
    # the most one relay function copies; a larger file is relayed as a Map over ranges this large
    # (4 GiB: at EFS's ~100 MiB/s per client, well inside Lambda's 15 minutes)
    relay_range_bytes: int = field(default_factory=lambda: _env_int(c.ENV_RELAY_RANGE_BYTES, 4 * c.GiB))
    # a commit of a large file up to this size starts the delta from the version it superseded
    delta_precompute_bytes: int = field(
        default_factory=lambda: _env_int(c.ENV_DELTA_PRECOMPUTE_BYTES, 256 * c.MiB)
    )
    # a delta job over a file up to this size with nothing to fetch first runs in the delta function
    # invoked by the controller itself (no workflow): well inside the API's 29 s
    delta_function: str = field(default_factory=lambda: os.environ.get(c.ENV_DELTA_FUNCTION, ""))
    delta_direct_bytes: int = field(default_factory=lambda: _env_int(c.ENV_DELTA_DIRECT_BYTES, 256 * c.MiB))

    tree_state_machine: str = field(default_factory=lambda: os.environ.get(c.ENV_TREE_STATE_MACHINE, ""))
    # trees with more entries than this are copied, moved or removed by a job, not in the request
    tree_inline_limit: int = field(default_factory=lambda: _env_int(c.ENV_TREE_INLINE_LIMIT, 200))
    # one step of a tree job works this long and on at most this many entries, then saves its cursor
    tree_step_s: int = field(default_factory=lambda: _env_int(c.ENV_TREE_STEP_S, 20))
    tree_step_entries: int = field(default_factory=lambda: _env_int(c.ENV_TREE_STEP_ENTRIES, 1_000_000))

    @property
    def namespaces_dir(self) -> str:
        return os.path.join(self.efs_root, "ns")

    @property
    def cache_dir(self) -> str:
        return os.path.join(self.efs_root, "cache")

    @property
    def staging_dir(self) -> str:
        return os.path.join(self.efs_root, "staging")
