"""Monthly cost of stored data, and of a month's operations, in four layouts (seed 000 Table II).

- hybrid: small files and every directory in EFS, large files in S3 behind link files (EFS),
  file and object records in DynamoDB. This is what the deployment pays.
- all-S3: every file one S3 object under its path; directories are key prefixes and cost
  nothing. It has no filesystem semantics (no rename, no directory listing beyond prefixes), and
  the index a real filesystem on S3 needs is not priced; the figure is the floor HyCloud aims at.
- all-EFS: every file a regular file in EFS, metered by the EFS rule.
- s3-files: today's alternative, Amazon S3 Files: every file an S3 object (S3 storage and
  requests), plus file-system storage for files under its 128 KiB import threshold and for
  recently written data, and per-GB charges for reading and writing through the file system (each
  operation metered as at least 32 KiB; exports to S3 count as reads; reads of larger files
  already in S3 are streamed from the bucket).

Storage lines are split like Table II into file data and metadata, and the unit storage price is
the total over the user's logical bytes (USD per GB-month of data as the user sees it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..constants import MiB
from ..content import PART_SIZE
from . import metering as m
from .prices import Prices
from .usage import Usage

LAYOUTS = ("hybrid", "all-s3", "all-efs", "s3-files")


@dataclass(frozen=True)
class CostBreakdown:
    layout: str
    lines: dict[str, float]  # USD per month by line item
    logical_bytes: int  # user data the layout holds
    billed_bytes: dict[str, int] = field(default_factory=dict)  # bytes metered per service

    @property
    def total(self) -> float:
        return sum(self.lines.values())

    @property
    def data_cost(self) -> float:
        return sum(v for k, v in self.lines.items() if k.endswith("_data"))

    @property
    def metadata_cost(self) -> float:
        return sum(v for k, v in self.lines.items() if k.endswith("_metadata"))

    def unit_price(self, prices: Prices) -> float | None:
        """USD per GB-month of logical data; None for an empty namespace."""
        gb = prices.gb(self.logical_bytes)
        return self.total / gb if gb else None

    def to_dict(self, prices: Prices) -> dict[str, Any]:
        return {
            "layout": self.layout,
            "lines": {k: round(v, 6) for k, v in self.lines.items()},
            "data_cost": round(self.data_cost, 6),
            "metadata_cost": round(self.metadata_cost, 6),
            "total": round(self.total, 6),
            "billed_bytes": dict(self.billed_bytes),
            "logical_bytes": self.logical_bytes,
            "unit_price_gb_month": self.unit_price(prices),
        }


def _store(prices: Prices, nbytes: int, price: str) -> float:
    return prices.gb(nbytes) * prices[price]


def s3_billed_bytes(usage: Usage, prices: Prices) -> int:
    """What S3 bills the hybrid layout for: contents and segments, with any per-object overhead."""
    objects = usage.s3_objects + usage.segment_objects
    return usage.s3_stored_bytes + objects * int(prices["s3_object_overhead_bytes"])


def efs_metadata_bytes(usage: Usage) -> int:
    """EFS bytes that are not file data: directories, link files, stubs of packed files, inodes."""
    return usage.efs_metadata_metered_bytes + usage.segment_stub_metered_bytes


def monthly_cost(usage: Usage, prices: Prices) -> CostBreakdown:
    """Storage cost of the hybrid layout as it stands (packed files: stub in EFS, bytes in S3)."""
    s3_billed = s3_billed_bytes(usage, prices)
    return CostBreakdown(
        "hybrid",
        {
            "efs_data": _store(prices, usage.efs_data_metered_bytes, "efs_storage_gb_month"),
            "efs_metadata": _store(prices, efs_metadata_bytes(usage), "efs_storage_gb_month"),
            "s3_data": _store(prices, s3_billed, "s3_storage_gb_month"),
            "dynamodb_metadata": _store(prices, usage.record_bytes, "dynamodb_storage_gb_month"),
        },
        usage.logical_bytes,
        {"efs": usage.efs_metered_bytes, "s3": s3_billed, "dynamodb": usage.record_bytes},
    )


def all_s3_cost(usage: Usage, prices: Prices) -> CostBreakdown:
    """The same files stored one object per path (no dedup: a plain bucket keeps every copy)."""
    billed = usage.logical_bytes + usage.files * int(prices["s3_object_overhead_bytes"])
    return CostBreakdown(
        "all-s3",
        {"s3_data": _store(prices, billed, "s3_storage_gb_month")},
        usage.logical_bytes,
        {"s3": billed},
    )


def all_efs_cost(usage: Usage, prices: Prices) -> CostBreakdown:
    """The same files and directories all in EFS; large files metered by their own size."""
    data = usage.efs_data_metered_bytes + usage.large_efs_data_bytes + usage.segment_efs_data_bytes
    metadata = m.EFS_METADATA_BYTES * usage.files + m.efs_dir_bytes() * usage.efs_dirs
    return CostBreakdown(
        "all-efs",
        {
            "efs_data": _store(prices, data, "efs_storage_gb_month"),
            "efs_metadata": _store(prices, metadata, "efs_storage_gb_month"),
        },
        usage.logical_bytes,
        {"efs": data + metadata},
    )


def s3_files_cost(usage: Usage, prices: Prices, recently_read_bytes: int = 0) -> CostBreakdown:
    """The same files in a bucket behind Amazon S3 Files; `recently_read_bytes` is the larger files'
    data it holds on file-system storage because it was read lately (none in a storage-only view)."""
    billed = usage.logical_bytes + usage.files * int(prices["s3_object_overhead_bytes"])
    on_fs = usage.s3files_small_bytes + recently_read_bytes
    return CostBreakdown(
        "s3-files",
        {
            "s3_data": _store(prices, billed, "s3_storage_gb_month"),
            "s3files_fs_data": _store(prices, on_fs, "s3files_fs_storage_gb_month"),
        },
        usage.logical_bytes,
        {"s3": billed, "s3files_fs": on_fs},
    )


def compare(usage: Usage, prices: Prices) -> dict[str, CostBreakdown]:
    return {
        "hybrid": monthly_cost(usage, prices),
        "all-s3": all_s3_cost(usage, prices),
        "all-efs": all_efs_cost(usage, prices),
        "s3-files": s3_files_cost(usage, prices),
    }


# --- a month's operations ------------------------------------------------------------------------


@dataclass(frozen=True)
class Operations:
    """A month's traffic; byte counts are totals over the month."""

    small_uploads: int = 0
    small_upload_bytes: int = 0
    small_downloads: int = 0
    small_download_bytes: int = 0
    large_uploads: int = 0
    large_upload_bytes: int = 0
    large_downloads: int = 0
    large_download_bytes: int = 0
    metadata_ops: int = 0  # list, stat, mkdir, move, copy, delete
    inter_region_bytes: int = 0  # blocks repair and migration jobs carried between regions


@dataclass(frozen=True)
class Assumptions:
    """What one operation consumes; rough figures, documented so they can be argued with.

    The controller is a 512 MB Lambda taking ~100 ms per call; it reads the API key (1 RRU) on
    every call, and a committed file costs 2 writes (record and object/lease). A large upload
    is a multipart upload (one PUT per 8 MiB part plus initiate and complete) begun and
    committed through the API. A relayed download copies S3 → EFS cache (one GET per part, EFS
    write) with a 1 GB Lambda moving ~100 MB/s, run by a Step Functions workflow of ~6
    transitions, then the client reads the cache in ranged pieces through the API (EFS read).
    `relayed_share` of the large downloads are relayed; the rest go direct (one controller call
    for the presigned URLs, then a GET per part from S3), which is the client's default unless it
    measured the relay clearly faster (client transfer/plan.py).
    """

    controller_gb: float = 0.5
    controller_seconds: float = 0.1
    relay_gb: float = 1.0
    relay_bytes_per_second: float = 100 * MiB
    relay_transitions: int = 6
    relay_piece_bytes: int = 4 * MiB
    key_reads_per_call: int = 1
    writes_per_commit: int = 2
    relayed_share: float = 1.0


def _parts(count: int, nbytes: int) -> int:
    return max(count, -(-nbytes // PART_SIZE)) if count else 0


def _api_lines(
    calls: int, prices: Prices, a: Assumptions, relay_runs: int = 0, relay_gb_s: float = 0.0
) -> dict[str, float]:
    """API Gateway, Lambda and key lookups for `calls` controller calls plus relay invocations."""
    gb_s = calls * a.controller_gb * a.controller_seconds + relay_gb_s
    return {
        "apigw_requests": calls / 1e6 * prices["apigw_rest_per_million"],
        "lambda_requests": (calls + relay_runs) / 1e6 * prices["lambda_per_million"],
        "lambda_duration": gb_s * prices["lambda_gb_second"],
        "dynamodb_reads": calls * a.key_reads_per_call / 1e6 * prices["dynamodb_read_per_million"],
    }


def _hybrid_ops(ops: Operations, prices: Prices, a: Assumptions) -> dict[str, float]:
    relayed = round(ops.large_downloads * a.relayed_share)
    relayed_bytes = int(ops.large_download_bytes * a.relayed_share)
    pieces = -(-relayed_bytes // a.relay_piece_bytes) if relayed else 0
    direct = ops.large_downloads - relayed  # one call for the presigned URLs each
    calls = (
        ops.small_uploads + ops.small_downloads + ops.metadata_ops + 2 * ops.large_uploads + pieces + direct
    )
    relay_gb_s = a.relay_gb * relayed_bytes / a.relay_bytes_per_second
    commits = ops.small_uploads + ops.large_uploads
    put_requests = _parts(ops.large_uploads, ops.large_upload_bytes) + 2 * ops.large_uploads
    efs_written = ops.small_upload_bytes + relayed_bytes  # relay fills its cache
    efs_read = ops.small_download_bytes + relayed_bytes  # pieces served from cache
    return {
        **_api_lines(calls, prices, a, relayed, relay_gb_s),
        "dynamodb_writes": commits * a.writes_per_commit / 1e6 * prices["dynamodb_write_per_million"],
        "s3_put_requests": put_requests / 1000 * prices["s3_put_per_1000"],
        "s3_get_requests": _parts(ops.large_downloads, ops.large_download_bytes)
        / 1000
        * prices["s3_get_per_1000"],
        "efs_writes": prices.gb(efs_written) * prices["efs_elastic_write_gb"],
        "efs_reads": prices.gb(efs_read) * prices["efs_elastic_read_gb"],
        "step_functions": relayed * a.relay_transitions / 1000 * prices["sfn_per_1000_transitions"],
        "egress": prices.gb(ops.small_download_bytes + ops.large_download_bytes)
        * prices["egress_internet_gb"],
        "inter_region": prices.gb(ops.inter_region_bytes) * prices["inter_region_gb"],
    }


def _all_s3_ops(ops: Operations, prices: Prices) -> dict[str, float]:
    """Clients talk to S3 directly; a metadata operation is a LIST (PUT-class price)."""
    small_puts = ops.small_uploads
    large_puts = _parts(ops.large_uploads, ops.large_upload_bytes) + 2 * ops.large_uploads
    gets = ops.small_downloads + _parts(ops.large_downloads, ops.large_download_bytes)
    downloaded = ops.small_download_bytes + ops.large_download_bytes
    return {
        "s3_put_requests": (small_puts + large_puts + ops.metadata_ops) / 1000 * prices["s3_put_per_1000"],
        "s3_get_requests": gets / 1000 * prices["s3_get_per_1000"],
        "egress": prices.gb(downloaded) * prices["egress_internet_gb"],
    }


def _all_efs_ops(ops: Operations, prices: Prices, a: Assumptions) -> dict[str, float]:
    """Every byte goes through the API into or out of EFS, large files in pieces both ways."""
    up_pieces = -(-ops.large_upload_bytes // a.relay_piece_bytes) if ops.large_uploads else 0
    down_pieces = -(-ops.large_download_bytes // a.relay_piece_bytes) if ops.large_downloads else 0
    calls = ops.small_uploads + ops.small_downloads + ops.metadata_ops + up_pieces + down_pieces
    written = ops.small_upload_bytes + ops.large_upload_bytes
    read = ops.small_download_bytes + ops.large_download_bytes
    return {
        **_api_lines(calls, prices, a),
        "dynamodb_writes": (ops.small_uploads + ops.large_uploads)
        * a.writes_per_commit
        / 1e6
        * prices["dynamodb_write_per_million"],
        "efs_writes": prices.gb(written) * prices["efs_elastic_write_gb"],
        "efs_reads": prices.gb(read) * prices["efs_elastic_read_gb"],
        "egress": prices.gb(read) * prices["egress_internet_gb"],
    }


def s3_files_io(prices: Prices, count: int, nbytes: int, price: str) -> float:
    """Reads or writes through S3 Files: `count` operations moving `nbytes`, each at least 32 KiB."""
    metered = max(nbytes, count * int(prices["s3files_min_io_bytes"]))
    return prices.gb(metered) * prices[price]


def _s3_files_ops(ops: Operations, prices: Prices) -> dict[str, float]:
    """Clients mount the file system (no API, no Lambda). Writes land on file-system storage and are
    exported to S3 (a read); a read of 128 KiB or more of data already in S3 is streamed from the
    bucket (a GET per part, no file-system charge: S3 user guide, "Working with Amazon S3 Files");
    small files are already there. A metadata operation is metered as one minimum-size read."""
    small_io = (ops.small_uploads, ops.small_upload_bytes)
    large_parts_up = _parts(ops.large_uploads, ops.large_upload_bytes)
    large_parts_down = _parts(ops.large_downloads, ops.large_download_bytes)
    large_up = (large_parts_up, ops.large_upload_bytes)
    writes = [small_io, large_up]
    reads = [small_io, large_up, (ops.small_downloads, ops.small_download_bytes), (ops.metadata_ops, 0)]
    downloaded = ops.small_download_bytes + ops.large_download_bytes
    return {
        "s3_put_requests": (ops.small_uploads + large_parts_up + 2 * ops.large_uploads)
        / 1000
        * prices["s3_put_per_1000"],
        "s3_get_requests": large_parts_down / 1000 * prices["s3_get_per_1000"],
        "s3files_writes": sum(s3_files_io(prices, n, b, "s3files_write_gb") for n, b in writes),
        "s3files_reads": sum(s3_files_io(prices, n, b, "s3files_read_gb") for n, b in reads),
        "egress": prices.gb(downloaded) * prices["egress_internet_gb"],
    }


def operations_cost(
    ops: Operations, prices: Prices, layout: str = "hybrid", assumptions: Assumptions | None = None
) -> dict[str, float]:
    """USD per month for requests, compute and transfer of `ops` in `layout` (EFS Elastic throughput)."""
    a = assumptions or Assumptions()
    if layout == "hybrid":
        return _hybrid_ops(ops, prices, a)
    if layout == "all-s3":
        return _all_s3_ops(ops, prices)
    if layout == "all-efs":
        return _all_efs_ops(ops, prices, a)
    if layout == "s3-files":
        return _s3_files_ops(ops, prices)
    raise ValueError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")


def attributed_s3_cost(attributed_bytes: float, prices: Prices) -> float:
    """S3 storage cost of a user's fair share of contents stored once for several users."""
    return prices.gb(attributed_bytes) * prices["s3_storage_gb_month"]
