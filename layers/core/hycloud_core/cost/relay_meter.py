"""The relay's cost per GB, from what this deployment's relay jobs moved and how long they ran.

The relay function adds each run to one DynamoDB item (the same figures it publishes as the EMF
metrics `BytesRelayed` and `JobDuration`), so the usage report prices the relay from measured
work without reading CloudWatch, which would cost a call per report and which the local cloud
does not derive from logs. Runs that were cache hits count too: they are paid for as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..constants import MiB
from ..content import PART_SIZE
from .model import Assumptions
from .prices import Prices

KEY = {"pk": "STATS#relay", "sk": "STATS"}


@dataclass(frozen=True)
class RelayStats:
    runs: int = 0
    bytes: int = 0
    mb_ms: int = 0  # duration x configured memory, summed: what Lambda bills
    duration_ms: int = 0

    @classmethod
    def from_item(cls, item: dict[str, Any] | None) -> RelayStats:
        item = item or {}
        return cls(*(int(item.get(name, 0)) for name in ("runs", "bytes", "mb_ms", "duration_ms")))


def record_run(table: Any, nbytes: int, duration_ms: float, memory_mb: int) -> None:
    """Add one relay run (atomic counters: concurrent runs never lose an update)."""
    table.update_item(
        Key=KEY,
        UpdateExpression="ADD runs :one, #b :b, mb_ms :mbms, duration_ms :ms",
        ExpressionAttributeNames={"#b": "bytes"},
        ExpressionAttributeValues={
            ":one": 1,
            ":b": int(nbytes),
            ":mbms": int(duration_ms * memory_mb),
            ":ms": int(duration_ms),
        },
    )


def read_stats(table: Any) -> RelayStats:
    return RelayStats.from_item(table.get_item(Key=KEY).get("Item"))


def relay_cost(stats: RelayStats, prices: Prices, a: Assumptions | None = None) -> dict[str, Any]:
    """USD the measured runs cost (Lambda, Step Functions, S3 GETs, EFS writes) and per GB relayed."""
    a = a or Assumptions()
    lines = {
        "lambda_duration": stats.mb_ms / 1024 / 1000 * prices["lambda_gb_second"],
        "lambda_requests": stats.runs / 1e6 * prices["lambda_per_million"],
        "step_functions": stats.runs * a.relay_transitions / 1000 * prices["sfn_per_1000_transitions"],
        "s3_get_requests": -(-stats.bytes // PART_SIZE) / 1000 * prices["s3_get_per_1000"],
        "efs_writes": prices.gb(stats.bytes) * prices["efs_elastic_write_gb"],
    }
    total, gb = sum(lines.values()), prices.gb(stats.bytes)
    seconds = stats.duration_ms / 1000
    return {
        "runs": stats.runs,
        "bytes": stats.bytes,
        "seconds": round(seconds, 3),
        "mib_per_second": round(stats.bytes / MiB / seconds, 2) if seconds else None,
        "lines": {k: round(v, 9) for k, v in lines.items()},
        "total": round(total, 9),
        "usd_per_gb": round(total / gb, 6) if gb else None,
    }
