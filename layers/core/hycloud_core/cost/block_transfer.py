"""What repair and migration jobs moved between regions, priced at the inter-region list price.

The jobs run in the home region: every block read from, or written to, another region's bucket
crosses a region boundary once (`fs/blocks.py BlockStore.crossed`). Each job step adds its bytes
to one DynamoDB item, as the relay meter does, so the usage report prices measured work.
"""

from __future__ import annotations

from typing import Any

from .prices import Prices

KEY = {"pk": "STATS#blocks", "sk": "STATS"}


def record_crossed(table: Any, nbytes: int) -> None:
    """Add one step's inter-region bytes (an atomic counter)."""
    if nbytes > 0:
        table.update_item(
            Key=KEY,
            UpdateExpression="ADD #b :b, steps :one",
            ExpressionAttributeNames={"#b": "bytes"},
            ExpressionAttributeValues={":b": int(nbytes), ":one": 1},
        )


def transfer_cost(table: Any, prices: Prices) -> dict[str, float | int]:
    """Bytes repair and migration moved between regions, and their USD at list price."""
    item = table.get_item(Key=KEY).get("Item") or {}
    nbytes = int(item.get("bytes", 0))
    return {"bytes": nbytes, "usd": round(prices.gb(nbytes) * prices["inter_region_gb"], 6)}
