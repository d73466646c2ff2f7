"""List prices from the one config file, `prices.json` beside this module.

Every figure the cost model uses is read from that file, so a price change is one edit there and
nothing in code. A deployment may point `HYCLOUD_PRICES` at its own copy (another region, a
negotiated rate); the schema is the same.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_PATH = Path(__file__).with_name("prices.json")
ENV_PRICES = "HYCLOUD_PRICES"

REQUIRED = (
    "s3_storage_gb_month",
    "s3_put_per_1000",
    "s3_get_per_1000",
    "s3_object_overhead_bytes",
    "egress_internet_gb",
    "efs_storage_gb_month",
    "efs_ia_storage_gb_month",
    "efs_elastic_read_gb",
    "efs_elastic_write_gb",
    "lambda_gb_second",
    "lambda_per_million",
    "sfn_per_1000_transitions",
    "dynamodb_write_per_million",
    "dynamodb_read_per_million",
    "dynamodb_storage_gb_month",
    "apigw_rest_per_million",
    # fixed monthly charges of a deployment (idle.py)
    "vpc_interface_endpoint_az_hour",
    "vpc_interface_endpoint_gb",
    "nat_gateway_hour",
    "nat_gateway_gb",
    "lambda_provisioned_gb_second",
    "lambda_provisioned_duration_gb_second",
    "cloudwatch_alarm_month",
    "kms_key_month",
    "cloudwatch_logs_ingest_gb",
    "cloudwatch_logs_storage_gb_month",
)


@dataclass(frozen=True)
class Prices:
    region: str
    date: str
    gb_bytes: int
    values: dict[str, float]

    def __getitem__(self, name: str) -> float:
        return self.values[name]

    def gb(self, nbytes: int | float) -> float:
        """Bytes in billing GB (AWS bills storage and transfer in GB of 2^30 bytes)."""
        return nbytes / self.gb_bytes

    def summary(self) -> dict[str, Any]:
        return {"region": self.region, "date": self.date, "values": dict(self.values)}


def from_document(doc: dict[str, Any]) -> Prices:
    items = doc["items"]
    missing = [name for name in REQUIRED if name not in items]
    if missing:
        raise ValueError(f"price file lacks {', '.join(missing)}")
    return Prices(
        region=doc["region"],
        date=doc["date"],
        gb_bytes=int(doc.get("gb_bytes", 1 << 30)),
        values={name: float(item["value"]) for name, item in items.items()},
    )


def load_prices(path: str | Path | None = None) -> Prices:
    """Prices from `path`, else `$HYCLOUD_PRICES`, else the file shipped with the library."""
    chosen = Path(path or os.environ.get(ENV_PRICES) or DEFAULT_PATH)
    return from_document(json.loads(chosen.read_text()))
