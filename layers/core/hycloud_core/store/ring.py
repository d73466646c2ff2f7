"""The ring the coded blocks are placed on, once a migration job changed it (docs/GEO.md).

Record `RING` / `RING`: the data instances a migration put on the ring, in the shape of
`HYCLOUD_INSTANCES` (region, bucket, state machine ARNs). Without it the ring is the deployed
instances. The job writes it before it moves any block, so uploads place by the new ring while
existing files move; reads follow each file's own layout and work throughout.
"""

from __future__ import annotations

from typing import Any

KEY = {"pk": "RING", "sk": "RING"}


def load(table: Any) -> list[dict[str, Any]] | None:
    """The data instances on the ring, or None while the deployed ones are."""
    item = table.get_item(Key=KEY, ConsistentRead=True).get("Item")
    return None if item is None else [dict(entry) for entry in item["instances"]]


def save(table: Any, instances: list[dict[str, Any]]) -> None:
    table.put_item(Item={**KEY, "instances": instances})
