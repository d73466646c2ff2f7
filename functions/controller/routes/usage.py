"""Usage and cost report of the caller's namespace: EFS vs S3, and what it costs per month."""

from __future__ import annotations

from functools import cache
from typing import Annotated, Literal

from answers import Usage, ok, replies
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import filesystem, namespace, records, user, user_name
from small_files import in_force

from hycloud_core.cost import Prices, compare, load_prices, measure_namespace, shares
from hycloud_core.cost.block_transfer import transfer_cost
from hycloud_core.cost.model import attributed_s3_cost
from hycloud_core.cost.records import reference_counts, user_usage_from_records, with_segment_records
from hycloud_core.cost.relay_meter import read_stats, relay_cost
from hycloud_core.store.quotas import Quota
from hycloud_core.store.shares import Shares
from hycloud_core.store.snapshot_records import SnapshotRecords

router = APIGatewayRouter()


@cache
def prices() -> Prices:
    return load_prices()


@router.get("/v1/usage", responses=replies(200, Usage))
def usage(source: Annotated[Literal["walk", "records"], Query()] = "walk"):
    """`source=walk` (default) walks the namespace on EFS and counts directories; `source=records`
    answers from one query of the user's file records, for namespaces too large to walk in time.
    Either way shared content costs one batched read of reference counts, never a table scan.
    Both count packed cold small files apart (bytes in S3 segments, stub in EFS: a packed file's
    record names its segment) and their segments' stored bytes from one query of the segment records.
    """
    name = user(router)
    trash = filesystem(router).trash.totals()  # first: an rm -r still counting is taken off the quota
    if source == "walk":
        measured, builder = measure_namespace(namespace(router), name)
    else:
        measured, builder = user_usage_from_records(records(), name)
    measured = with_segment_records(measured, records().table, name)
    shared = shares(builder, reference_counts(records().table, builder.contents))
    table = prices()
    return ok(
        {
            "user": user_name(router),
            "source": source,
            "quota": Quota(records(), name).report(),
            "usage": measured.to_dict(),
            "shared": {
                **shared.to_dict(),
                "attributed_s3_cost": round(attributed_s3_cost(shared.attributed_bytes, table), 6),
            },
            "share_links": Shares(records().table).served(name),  # downloads by anyone holding a link
            "trash": trash,  # apart: not in `usage` nor the quota
            "snapshots": SnapshotRecords(records().table, name).totals(),  # apart, as the trash
            "threshold": in_force(name).to_dict(),  # where small files end, and why
            "costs": {layout: cost.to_dict(table) for layout, cost in compare(measured, table).items()},
            "region_storage_costs": measured.region_costs(table["s3_storage_gb_month"], table.gb_bytes),
            "relay": relay_cost(read_stats(records().table), table),
            "inter_region": transfer_cost(records().table, table),  # blocks repair/migration moved
            "prices": {"region": table.region, "date": table.date},
        }
    )
