"""`hycloud usage` and `hycloud admin usage`: what is stored where, and its monthly cost in three layouts;
`hycloud usage` also shows what the deployment costs per month idle (hycloud_core/cost/idle.py)."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from ..sdk import HyCloud

LAYOUT_TITLES = {
    "hybrid": "HyCloud (EFS + S3)",
    "all-s3": "all in S3",
    "all-efs": "all in EFS",
    "s3-files": "Amazon S3 Files",
}


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def dollars(x: float | None) -> str:
    if x is None:
        return "-"
    if x < 0.01:
        return f"${x:.6f}"
    return f"${x:,.4f}" if x < 1 else f"${x:,.2f}"


def storage_table(usage: dict) -> Table:
    table = Table(title="Where the data is", box=None)
    for col in ("service", "objects", "logical bytes", "billed bytes"):
        table.add_column(col, justify="left" if col == "service" else "right")
    table.add_row(
        "EFS small files",
        str(usage["efs_files"]),
        human_bytes(usage["efs_bytes"]),
        human_bytes(usage["efs_data_metered_bytes"]),
    )
    table.add_row(
        "EFS metadata: dirs, links, inodes",
        f"{usage['efs_dirs']} dirs, {usage['link_files']} links",
        human_bytes(usage["link_file_bytes"]),
        human_bytes(usage["efs_metadata_metered_bytes"]),
    )
    table.add_row(
        "S3 large-file contents",
        str(usage["s3_objects"]),
        human_bytes(usage["s3_logical_bytes"]),
        human_bytes(usage["s3_bytes"]),
    )
    if usage.get("segment_files"):  # a controller before segments sends none
        table.add_row(
            "S3 segments: packed small files",
            f"{usage['segment_files']} files, {usage['segment_objects']} segments",
            human_bytes(usage["segment_bytes"]),
            human_bytes(usage["segment_stored_bytes"]),
        )
    return table


def segment_rows(usage: dict) -> list[tuple[str, str, int, int]]:
    """Packed cold small files (docs/SEGMENTS.md): a stub at the path, the bytes in an S3 segment."""
    return [
        (
            "EFS Standard",
            "stubs of packed files: names stay in EFS",
            usage.get("segment_files", 0),
            usage.get("segment_stub_metered_bytes", 0),
        ),
        (
            "S3 segments (Intelligent-Tiering)",
            "small files unused 7+ days, packed: S3 costs less than EFS Standard",
            usage.get("segment_objects", 0),
            usage.get("segment_stored_bytes", 0),
        ),
    ]


def class_rows(usage: dict) -> list[tuple[str, str, int, int]]:
    """(storage class, why the files are there, objects, billed bytes); each store's rows add up to
    its billed bytes (EFS: `efs_metered_bytes`, S3: `s3_stored_bytes`). Which tier a file is in now is not known per user: EFS reports its classes per
    file system and Intelligent-Tiering per bucket, so the rows say what may move, not what has."""
    efs_tiered, s3_tiered = usage.get("efs_tierable_data_bytes", 0), usage.get("s3_tierable_bytes", 0)
    efs_n, s3_n = usage.get("efs_tierable_files", 0), usage.get("s3_tierable_objects", 0)
    return [
        (
            "EFS Standard",
            "directories, link files, inodes",
            usage["efs_dirs"] + usage["link_files"],
            usage["efs_metadata_metered_bytes"],
        ),
        (
            "EFS Standard",
            "small files under 128 KiB: never moved",
            usage["efs_files"] - efs_n,
            usage["efs_data_metered_bytes"] - efs_tiered,
        ),
        ("EFS Standard > IA > Archive", "small files of 128 KiB+: 30 and 180 days unread", efs_n, efs_tiered),
        (
            "S3 Standard",
            "contents under 128 KiB: never monitored",
            usage["s3_objects"] - s3_n,
            usage["s3_bytes"] - s3_tiered,
        ),
        ("S3 Intelligent-Tiering", "contents of 128 KiB+: 30 and 90 days unread", s3_n, s3_tiered),
        *segment_rows(usage),
    ]


def class_table(usage: dict) -> Table:
    table = Table(title="Storage classes (files unread long enough move to cheaper tiers)", box=None)
    for col in ("class", "what and when", "objects", "billed bytes"):
        table.add_column(col, justify="left" if col in ("class", "what and when") else "right")
    for name, why, count, nbytes in class_rows(usage):
        table.add_row(name, why, str(count), human_bytes(nbytes))
    return table


THRESHOLD_SOURCES = {
    "configured": "fixed by the operator",
    "user": "chosen by cost for you",
    "deployment": "chosen by cost for the deployment",
    "default": "the configured starting value",
}


def threshold_line(threshold: dict) -> str:
    """`small-file threshold 512 KiB, chosen by cost for you: chose 512 KiB: ...`."""
    source = THRESHOLD_SOURCES.get(threshold["source"], threshold["source"])
    return f"small-file threshold {human_bytes(threshold['threshold'])}, {source}: {threshold['reason']}"


def placement_rows(threshold: int) -> list[tuple[str, str, str]]:
    """(kind of file, where it lives, why): the rules behind the storage classes above."""
    t = human_bytes(threshold)
    return [
        (
            f"files up to {t}",
            "EFS (from 128 KiB: IA after 30 days unread)",
            "at or under the threshold a file costs less in EFS than as an S3 object, its link file "
            "and requests, for your measured reads and writes",
        ),
        (
            f"files over {t}",
            "S3 (from 128 KiB: Intelligent-Tiering)",
            "over it S3's storage and per-part requests cost less than EFS's per GB and its access charges",
        ),
        (
            "small files unused 7+ days (4 KiB to 128 KiB)",
            "S3 segments, a stub in EFS",
            "too small for EFS's tiers, too many for one S3 object each",
        ),
        ("names, folders, link files", "EFS Standard", "never tiered; they are what makes it a file system"),
    ]


def placement_table(threshold: int) -> Table:
    table = Table(title="Why each kind of file lives where", box=None)
    for col in ("files", "where", "why"):
        table.add_column(col)
    for row in placement_rows(threshold):
        table.add_row(*row)
    return table


def cost_table(costs: dict, prices: dict) -> Table:
    title = f"Monthly storage cost at {prices['region']} list prices ({prices['date']})"
    table = Table(title=title, box=None)
    for col in ("layout", "file data", "metadata", "total", "$/GB-month"):
        table.add_column(col, justify="left" if col == "layout" else "right")
    for layout, cost in costs.items():
        table.add_row(
            LAYOUT_TITLES.get(layout, layout),
            dollars(cost["data_cost"]),
            dollars(cost["metadata_cost"]),
            dollars(cost["total"]),
            "-" if cost["unit_price_gb_month"] is None else f"{cost['unit_price_gb_month']:.5f}",
        )
    return table


def quota_line(quota: dict) -> str:
    """`quota: 1.00 MiB of 10.00 MiB, 3 of unlimited files`."""
    b, f = quota["bytes"], quota["files"]
    limit_b = "unlimited" if b["limit"] is None else human_bytes(b["limit"])
    limit_f = "unlimited" if f["limit"] is None else str(f["limit"])
    return f"quota: {human_bytes(b['used'])} of {limit_b}, {f['used']} of {limit_f} files"


def trash_line(trash: dict) -> str:
    """`trash: 2 items, 5 files, 1.00 MiB (not in the quota; hycloud trash ls)`."""
    return (
        f"trash: {trash['items']} items, {trash['files']} files, {human_bytes(trash['bytes'])} "
        "(not in the quota; hycloud trash ls)"
    )


def snapshots_line(held: dict) -> str:
    """`snapshots: 2, 5 files, 1.00 MiB (not in the usage above; hycloud snapshot ls)`."""
    return (
        f"snapshots: {held['snapshots']}, {held['files']} files, {human_bytes(held['bytes'])} "
        "(not in the usage above; hycloud snapshot ls)"
    )


def show_usage(report: dict, json_output: bool, console: Console | None = None) -> None:
    console = console or Console()
    if json_output:
        console.print_json(json.dumps(report))
        return
    usage = report["usage"]
    console.print(f"user {report['user']}: {usage['files']} files, {human_bytes(usage['logical_bytes'])}")
    if report.get("quota"):
        console.print(quota_line(report["quota"]), highlight=False)
    if report.get("trash"):  # a controller before the trash sends none
        console.print(trash_line(report["trash"]), highlight=False)
    if report.get("snapshots", {}).get("snapshots"):  # none made, or a controller before them
        console.print(snapshots_line(report["snapshots"]), highlight=False)
    console.print(storage_table(usage))
    console.print(class_table(usage))
    if report.get("threshold"):  # a controller before the choice by cost sends none
        console.print(threshold_line(report["threshold"]), highlight=False)
        console.print(placement_table(report["threshold"]["threshold"]))
    if usage["dedup_saved_bytes"]:
        console.print(f"duplicate large files share storage: {human_bytes(usage['dedup_saved_bytes'])} saved")
    shared = report.get("shared") or {}
    if shared.get("shared_objects"):
        console.print(
            f"{shared['shared_objects']} contents ({human_bytes(shared['shared_bytes'])}) are shared with "
            f"other users; your share of S3: {human_bytes(shared['attributed_bytes'])}, "
            f"{dollars(shared['attributed_s3_cost'])}/month"
        )
    console.print(cost_table(report["costs"], report["prices"]))
    if report.get("relay"):
        console.print(relay_line(report["relay"]), highlight=False)
    if report.get("idle"):
        console.print(idle_line(report["idle"]), highlight=False)


def relay_line(relay: dict) -> str:
    """What this deployment's relay runs moved and cost per GB (all users)."""
    if relay["usd_per_gb"] is None:
        return f"relay: {relay['runs']} runs, nothing fetched yet"
    return (
        f"relay (whole deployment): {relay['runs']} runs moved {human_bytes(relay['bytes'])} in "
        f"{relay['seconds']:.1f} s, {dollars(relay['total'])}: {dollars(relay['usd_per_gb'])}/GB"
    )


DEFAULT_REGIONS = ("us-east-1", "us-west-2", "eu-west-1")  # cdk.json's hycloud:regions
IDLE_TITLES = {
    "interface_endpoints": "interface endpoints",
    "nat_gateways": "NAT gateways",
    "provisioned_concurrency": "provisioned concurrency",
    "scheduled_runs": "scheduled functions",
    "logs": "their logs",
    "alarms": "alarms",
    "kms_keys": "KMS keys",
}


def deployment_idle(client: HyCloud) -> dict:
    """The deployment's fixed monthly cost: its regions as the controller lists them (GET
    /v1/instances), a standby if this client is configured with one. A controller that does not
    answer is priced as the default deployment of cdk.json, and the report says so."""
    from hycloud_core.cost import deployment_shape, idle_monthly, load_prices
    from hycloud_core.errors import HyCloudError

    from ..failover import FailoverHttp

    standby = "standby" if isinstance(client.http, FailoverHttp) else None
    try:
        regions, source = [i["region"] for i in client.instances()], "deployment"
    except (HyCloudError, KeyError, TypeError):  # an older controller: the default shape, labelled
        regions, source = list(DEFAULT_REGIONS), "default"
    prices = load_prices()
    regions = regions or list(DEFAULT_REGIONS[:1])
    shape = deployment_shape(regions, standby=standby)
    return {
        "shape": source,
        "regions": regions,
        "standby": bool(standby),
        "provisioned_concurrency": "not known to the client: counted as 0, the default",
        "prices": {"region": prices.region, "date": prices.date},
        **idle_monthly(shape, prices).to_dict(),
    }


def idle_line(idle: dict) -> str:
    """`idle deployment (3 regions, standby): $59.87/month: interface endpoints $58.40, ...`."""
    where = f"{len(idle['regions'])} region{'s' if len(idle['regions']) != 1 else ''}"
    where += ", standby" if idle["standby"] else ""
    if idle["shape"] == "default":
        where = f"the default deployment, {where}: the controller did not list its regions"
    items = ", ".join(f"{IDLE_TITLES.get(k, k)} {dollars(v)}" for k, v in idle["lines"].items() if v > 0)
    return (
        f"idle deployment ({where}) at {idle['prices']['region']} list prices: "
        f"{dollars(idle['total'])}/month ({items}; storage, requests and CloudFront are per use)"
    )


def usage_command(json_output: bool, console: Console | None = None) -> None:
    """Fetch and print the caller's usage report, with the deployment's idle monthly cost."""
    client = HyCloud.from_config()
    report = client.http.json("GET", "/v1/usage")
    show_usage({**report, "idle": deployment_idle(client)}, json_output, console)


def show_deployment(report: dict, json_output: bool, console: Console | None = None) -> None:
    console = console or Console()
    if json_output:
        console.print_json(json.dumps(report))
        return
    objects = report["objects"]
    console.print(
        f"S3 holds {objects['s3_objects']} contents, {human_bytes(objects['s3_bytes'])} "
        f"for {objects['references']} references ({human_bytes(objects['dedup_saved_bytes'])} saved by dedup)"
    )
    table = Table(title="Per user (directories not counted)", box=None)
    for col in ("user", "files", "EFS metered", "S3 distinct", "HyCloud", "all S3", "all EFS", "S3 Files"):
        table.add_column(col, justify="left" if col == "user" else "right")
    for name, entry in report["users"].items():
        u, c = entry["usage"], entry["costs"]
        table.add_row(
            name,
            str(u["files"]),
            human_bytes(u["efs_metered_bytes"]),
            human_bytes(u["s3_bytes"]),
            *(dollars(c[k]["total"]) for k in ("hybrid", "all-s3", "all-efs", "s3-files")),
        )
    console.print(table)
    console.print(cost_table(report["all_users"]["costs"], report["prices"]))
    if report.get("threshold"):  # the deployment's choice by cost (cost/thresholds.py)
        t = report["threshold"]
        console.print(
            f"deployment's small-file threshold {human_bytes(t['threshold'])}: {t['reason']}", highlight=False
        )


def admin_usage_command(table: str, json_output: bool, console: Console | None = None) -> None:
    """Scan the deployment's table (AWS credentials needed; reads every item once)."""
    import boto3  # only here: the deployment's table, with AWS credentials

    from hycloud_core.cost import load_prices
    from hycloud_core.cost.records import deployment_usage
    from hycloud_core.cost.thresholds import Thresholds

    dynamodb = boto3.resource("dynamodb").Table(table)
    report = deployment_usage(dynamodb).report(load_prices())
    chosen = Thresholds(dynamodb).get()  # None until the upkeep has measured enough to choose
    if chosen:
        report["threshold"] = {
            "threshold": chosen["threshold"],
            "reason": chosen["reason"],
            "at": chosen["at"],
        }
    show_deployment(report, json_output, console)
