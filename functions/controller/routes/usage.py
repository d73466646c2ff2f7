"""Usage and cost report of the caller's namespace: EFS vs S3, and what it costs per month."""

from __future__ import annotations

from functools import cache

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import namespace, ok, records, user
from hycloud_core.cost import Prices, compare, load_prices, measure_namespace, shares
from hycloud_core.cost.model import attributed_s3_cost
from hycloud_core.cost.records import reference_counts

router = APIGatewayRouter()


@cache
def prices() -> Prices:
    return load_prices()


@router.get("/v1/usage")
def usage() -> Response:
    """One walk of the namespace, one batched read of reference counts; no table scan."""
    name = user(router)
    measured, builder = measure_namespace(namespace(router), name)
    shared = shares(builder, reference_counts(records().table, builder.contents))
    table = prices()
    return ok(
        {
            "user": name,
            "usage": measured.to_dict(),
            "shared": {
                **shared.to_dict(),
                "attributed_s3_cost": round(attributed_s3_cost(shared.attributed_bytes, table), 6),
            },
            "costs": {layout: cost.to_dict(table) for layout, cost in compare(measured, table).items()},
            "prices": {"region": table.region, "date": table.date},
        }
    )
