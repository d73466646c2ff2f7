"""Storage by tier, and the small-file threshold chosen by cost (infra: constructs/storage_tiers.py).

EFS lifecycle moves a file of 128 KiB or more unread for 30 days to Infrequent Access and after
180 days to Archive; S3 Intelligent-Tiering moves an object of 128 KiB or more unread for 30 days
to its Infrequent tier and after 90 to Archive Instant Access. Smaller files and all metadata
stay in the standard tier, which is why tiers do little for tiny files.

How much is cold is an assumption (`ColdShare`). The default starts from AWS's own estimate on
the EFS pricing page that 80% of files go unread in a month, and carries the same monthly rate
forward (memoryless, which understates how long cold files stay cold): 0.8^3 = 51% of the bytes
unread for 90 days, 0.8^6 = 26% for 180. Each cold byte is taken to move down once and be read
back once over `months_held` months (12): the tiering and cold-read charges are spread over them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from ..content import PART_SIZE
from . import metering as m
from .model import CostBreakdown, efs_metadata_bytes, s3_billed_bytes
from .prices import Prices
from .usage import Usage

# AWS, EFS pricing page: "20% of files are actively used and 80% are infrequently accessed"
MONTHLY_UNREAD = 0.8


@dataclass(frozen=True)
class ColdShare:
    """Shares of tierable bytes unread for at least 30, 90 and 180 days (each at most the last)."""

    after_30_days: float = MONTHLY_UNREAD
    after_90_days: float = MONTHLY_UNREAD**3
    after_180_days: float = MONTHLY_UNREAD**6
    months_held: float = 12.0  # transitions and cold reads are charged once over this many months

    @classmethod
    def none(cls) -> ColdShare:
        return cls(0.0, 0.0, 0.0)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _spread(total: float, cold: ColdShare) -> float:
    return 0.0 if math.isinf(cold.months_held) else total / cold.months_held


def efs_tiered_gb_month(prices: Prices, cold: ColdShare) -> float:
    """USD per GB-month of EFS data that lifecycle management may move, with its moves and cold reads."""
    ia = cold.after_30_days - cold.after_180_days
    archive = cold.after_180_days
    storage = (
        (1 - cold.after_30_days) * prices["efs_storage_gb_month"]
        + ia * prices["efs_ia_storage_gb_month"]
        + archive * prices["efs_archive_storage_gb_month"]
    )
    once = (
        cold.after_30_days * prices["efs_ia_tiering_gb"]
        + archive * prices["efs_archive_tiering_gb"]
        + ia * prices["efs_ia_read_gb"]
        + archive * prices["efs_archive_read_gb"]
    )
    return storage + _spread(once, cold)


def s3_tiered_gb_month(prices: Prices, cold: ColdShare) -> float:
    """USD per GB-month of S3 data under Intelligent-Tiering (no retrieval fee, no minimum duration)."""
    return (
        (1 - cold.after_30_days) * prices["s3_storage_gb_month"]
        + (cold.after_30_days - cold.after_90_days) * prices["s3_int_infrequent_gb_month"]
        + cold.after_90_days * prices["s3_int_archive_instant_gb_month"]
    )


def s3_tiered_object_month(prices: Prices, cold: ColdShare) -> float:
    """USD per month per object of 128 KiB or more: monitoring, plus its one transition spread."""
    transition = prices["s3_lifecycle_transition_per_1000"] / 1000
    return prices["s3_int_monitoring_per_1000"] / 1000 + _spread(transition, cold)


def tiered_cost(
    usage: Usage, prices: Prices, cold: ColdShare | None = None, s3_cold: ColdShare | None = None
) -> CostBreakdown:
    """Storage cost of the hybrid layout with EFS lifecycle and S3 Intelligent-Tiering; `s3_cold`
    is the large files' cold share where it differs from the small files' (`cold`)."""
    cold = cold or ColdShare()
    s3_cold = s3_cold or cold
    gb = prices.gb
    efs_std = prices["efs_storage_gb_month"]
    s3_billed = s3_billed_bytes(usage, prices)
    efs_untiered = usage.efs_data_metered_bytes - usage.efs_tierable_data_bytes
    # segments hold files already unread 30 days and are tiered like contents (a pass's last
    # segment of a user may be under 128 KiB and stay Standard: not told apart here)
    s3_tiered = usage.s3_tierable_bytes + usage.segment_stored_bytes
    s3_untiered = s3_billed - s3_tiered
    return CostBreakdown(
        "hybrid-tiers",
        {
            "efs_data": gb(efs_untiered) * efs_std
            + gb(usage.efs_tierable_data_bytes) * efs_tiered_gb_month(prices, cold),
            "efs_metadata": gb(efs_metadata_bytes(usage)) * efs_std,
            "s3_data": gb(s3_untiered) * prices["s3_storage_gb_month"]
            + gb(s3_tiered) * s3_tiered_gb_month(prices, s3_cold),
            "s3_monitoring_data": (usage.s3_tierable_objects + usage.segment_objects)
            * s3_tiered_object_month(prices, s3_cold),
            "dynamodb_metadata": gb(usage.record_bytes) * prices["dynamodb_storage_gb_month"],
        },
        usage.logical_bytes,
        {"efs": usage.efs_metered_bytes, "s3": s3_billed, "dynamodb": usage.record_bytes},
    )


# --- the small-file threshold --------------------------------------------------------------------


@dataclass(frozen=True)
class FileAccess:
    """How often a file is read and written whole in a month, and how much of it goes cold."""

    reads_per_month: float = 1.0
    writes_per_month: float = 0.1
    cold: ColdShare = ColdShare()


def _tierable(size: int) -> bool:
    return size >= m.MIN_TIERED_BYTES


def efs_file_month(size: int, prices: Prices, access: FileAccess) -> float:
    """USD per month of one file kept in EFS: inode, data by tier, Elastic reads and writes."""
    std = prices["efs_storage_gb_month"]
    data_price = efs_tiered_gb_month(prices, access.cold) if _tierable(size) else std
    moved = access.reads_per_month * prices["efs_elastic_read_gb"]
    moved += access.writes_per_month * prices["efs_elastic_write_gb"]
    return (
        prices.gb(m.EFS_METADATA_BYTES) * std
        + prices.gb(m.efs_data_bytes(size)) * data_price
        + prices.gb(size) * moved
    )


def _put_requests(size: int) -> int:
    """One PUT up to a part, else a multipart upload: its parts, initiate and complete."""
    parts = max(1, -(-size // PART_SIZE))
    return 1 if parts == 1 else parts + 2


def s3_file_month(size: int, prices: Prices, access: FileAccess) -> float:
    """USD per month of one file kept in S3: its link file (EFS Standard) and object record, its
    data by tier and per-object charges, a PUT per write and a GET per part read."""
    std = prices["efs_storage_gb_month"]
    link = prices.gb(m.efs_file_bytes(m.LINK_FILE_BYTES_ESTIMATE)) * std
    record = prices.gb(m.OBJECT_RECORD_BYTES) * prices["dynamodb_storage_gb_month"]
    if _tierable(size):
        data = prices.gb(size) * s3_tiered_gb_month(prices, access.cold)
        data += s3_tiered_object_month(prices, access.cold)
    else:
        data = prices.gb(size) * prices["s3_storage_gb_month"]
    puts = access.writes_per_month * _put_requests(size) * prices["s3_put_per_1000"] / 1000
    gets = access.reads_per_month * max(1, -(-size // PART_SIZE)) * prices["s3_get_per_1000"] / 1000
    return link + record + data + puts + gets


def _efs_dearer(size: int, prices: Prices, access: FileAccess) -> bool:
    return efs_file_month(size, prices, access) >= s3_file_month(size, prices, access)


SCAN_BYTES = 64 << 20  # the crossovers lie below; above, every EFS tier costs more per byte than S3's


def _last_cheaper_in_block(lo: int, hi: int, prices: Prices, access: FileAccess) -> int | None:
    """The largest size in [lo, hi] (one EFS block: EFS's cost is fixed, both sides linear) that
    EFS keeps cheaper, or None. The difference is monotonic inside a block, so its ends decide."""
    if not _efs_dearer(hi, prices, access):
        return hi
    if _efs_dearer(lo, prices, access):
        return None
    while lo < hi:  # cheaper at lo, dearer at hi
        mid = (lo + hi + 1) // 2
        if _efs_dearer(mid, prices, access):
            hi = mid - 1
        else:
            lo = mid
    return lo


def choose_threshold(prices: Prices, access: FileAccess | None = None, largest: int = 4 << 30) -> int:
    """The smallest size from which a file never costs more in S3 than in EFS: files below it are small.

    EFS minus S3 is not monotonic: it jumps at every 4 KiB block EFS adds and drops at 128 KiB,
    where EFS's tiers start (a cold file's data falls from $0.30 to $0.008) while S3's smaller
    objects stop being Standard-priced and start paying monitoring. So the blocks up to 64 MiB are
    walked, each decided by its two ends, and the last size EFS keeps cheaper is the crossover;
    above 64 MiB EFS costs more per byte in every tier, with its read and write charges against a
    request per 8 MiB part, and stays dearer. Returns `largest` + 1 when EFS is cheaper at `largest`.
    """
    access = access or FileAccess()
    if not _efs_dearer(largest, prices, access):
        return largest + 1
    last = 0
    block = m.EFS_BLOCK_BYTES
    for start in range(1, min(largest, SCAN_BYTES) + 1, block):
        found = _last_cheaper_in_block(start, min(start + block - 1, largest), prices, access)
        last = found if found is not None else last
    return last + 1
