"""Storage cost of the hybrid layout beside all-S3, all-EFS (seed 000 Table II) and Amazon S3 Files, and cost per GB moved.

The seed prices a one-day trace of 514,095 files from 5 KB to ~4 GB. That trace is not public,
so the same count and range are drawn from synthetic size distributions (seeded, reproducible):

- trace-range: log-uniform over 5 KB .. 4 GiB (half the files are below ~4.5 MiB);
- small-heavy: 90% log-uniform 5 KB .. 2 MiB, 10% log-uniform 2 MiB .. 4 GiB;
- tiny-heavy: 99% log-uniform 1 KB .. 64 KiB, 1% log-uniform 2 MiB .. 1 GiB.

One directory per 100 files. Prices come from hycloud_core/cost/prices.json. A threshold
sweep shows how the small/large split moves the bill, and a per-GB table shows what a download
and an upload cost in each layout (EFS under Elastic throughput, where relaying through EFS is
not free). Amazon S3 Files, today's managed alternative, is priced at its 2026 list prices: S3
storage and requests, file-system storage for files under 128 KiB, and per-GB reads and writes
(at least 32 KiB each; imports are writes, exports reads). All figures are arithmetic on list
prices: nothing here depends on machine load.

HyCloud with tiers is the same layout under the deployment's storage tiers (infra
constructs/storage_tiers.py): EFS lifecycle (IA after 30 days unread, Archive after 180) for small
files of 128 KiB and more, S3 Intelligent-Tiering for contents of 128 KiB and more, with their
moves, cold reads and monitoring (hycloud_core/cost/tiers.py), and small files of one block to
128 KiB packed into S3 segments once 7 days unused (docs/SEGMENTS.md; hycloud_core/cost/
segments_bill.py: Intelligent-Tiering by band, 75% live, the stub left in EFS Standard, the
cleaner's compactions of rewritten files' segments counted). The
share of cold data is an assumption: AWS's estimate on the EFS pricing page that 80% of files go unread in a month,
carried forward at the same monthly rate (51% unread 90 days, 26% 180 days; memoryless, so it
understates long-cold data), each cold byte moved and read back once a year. It is also priced at
the small-file threshold chosen by cost for a file read once a month and rewritten every ten
(tiers.choose_threshold). all-S3 Standard and S3 Files keep S3 Standard prices; all-S3 under the
same Intelligent-Tiering and cold share is shown beside them.

With `--table` (a deployment's table; AWS credentials and endpoint from the environment, as for
`hycloud admin`), the relay's cost per GB is also priced from that deployment's measured relay
runs (hycloud_core/cost/relay_meter.py) beside the modelled figure.

It also prices what a deployment costs idle per month (hycloud_core/cost/idle.py), from the shape
the CDK app builds from cdk.json's context: the default three regions, the same with the standby
controller the local cloud deploys (us-west-2, replicating every minute as on AWS by default), and
the one-region profile (`-c hycloud:regions=us-east-1`, no standby), each broken down by item.

The whole bill of a month (hycloud_core/cost/bill.py) is priced on each mix and on a trace, a
month in a day: storage by tier, requests, Lambda and Step Functions, DynamoDB, with egress and
the deployment's fixed monthly cost apart. Every file's month is drawn, then charged in each
layout from the same draw:

- the synthetic mixes: the same sizes; days since each file was last touched drawn so that 80% of
  files go a month unread (AWS's figure, memoryless); a read in the month for 20% of files and a
  rewrite for 10%, on uniform days; one metadata operation (listing, stat) per read or write.
- the trace: sizes and modification times of every regular file under an installed package tree
  (`--trace-root`, /usr by default: Debian packages keep their upstream modification times; the
  project's .venv does not, pip stamps every file with its install time). Each file's age is
  taken as the days since it was last touched; over the month a file is read a Poisson number of
  times with mean 2 x 30 / (30 + age in days) (reads skewed to recent files: twice a month when
  new, once at a month old, 0.16 at a year), rewritten with a tenth of that rate, and the team
  adds 3% new files (sizes drawn from the tree) on uniform days; one metadata operation per read
  or write.

Large downloads go direct from S3 (the client's default); HyCloud's threshold chosen by cost uses
the month's own read and write rates and cold share, and the threshold per mix is the candidate
(4 KiB .. 8 MiB) whose whole bill of that month is the lowest (cost/bill.py cheapest_threshold:
the same bills a deployment chooses its own threshold by, from 4 KiB to 4 MiB with guard rails on
top: cost/threshold_choice.py).
The results start with that layout's ratio to each peer; on the trace they also say where its
month goes, line by line, and the two floors of the layout (a name in EFS, a call through the API).

Run:  python bench/cost_bench.py [--files 514095] [--seed 1] [--table TABLE] [--trace-root /usr]
Writes bench/results/cost.json and bench/results/cost.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import stat
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "layers" / "core"))

import result_files  # noqa: E402

from hycloud_core.cost import (  # noqa: E402
    Operations,
    compare,
    load_prices,
    metering,  # noqa: E402
    usage_from_sizes,
)
from hycloud_core.cost.access_meter import Meter, band  # noqa: E402
from hycloud_core.cost.bill import LAYOUTS as BILL_LAYOUTS  # noqa: E402
from hycloud_core.cost.bill import FileMonth, Month, month_bills  # noqa: E402
from hycloud_core.cost.idle import idle_monthly, shape_from_context  # noqa: E402
from hycloud_core.cost.model import (  # noqa: E402
    LAYOUTS,
    Assumptions,  # noqa: E402
    operations_cost,
)
from hycloud_core.cost.relay_meter import RelayStats, read_stats, relay_cost  # noqa: E402
from hycloud_core.cost.segments_bill import packable, packed_month, packed_storage, with_lines  # noqa: E402
from hycloud_core.cost.threshold_choice import Mix, choose  # noqa: E402
from hycloud_core.cost.tiers import (  # noqa: E402
    ColdShare,
    FileAccess,
    choose_threshold,
    s3_tiered_gb_month,
    s3_tiered_object_month,
    tiered_cost,
)

KB, KiB, MiB, GiB = 1000, 1024, 1024**2, 1024**3
THRESHOLD = 2 * MiB
IDLE_PROFILES = {  # CDK context overrides on cdk.json's
    "default (3 regions)": {},
    "default + standby (us-west-2)": {"hycloud:standby": "us-west-2"},
    "one region (us-east-1)": {"hycloud:regions": "us-east-1", "hycloud:standby": ""},
    "default, 1 warm relay + delta": {"hycloud:provisionedConcurrency": 1},
}
IDLE_ITEMS = (
    "interface_endpoints",
    "nat_gateways",
    "provisioned_concurrency",
    "scheduled_runs",
    "logs",
    "alarms",
    "kms_keys",
)
SEED_TABLE_II = {"all-s3": 0.02278, "all-efs": 0.3, "hybrid": 0.02279}  # $/GB-month, seed 000


def log_uniform(rng: random.Random, lo: float, hi: float) -> int:
    return int(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def distribution(name: str, n: int, seed: int) -> list[int]:
    rng = random.Random(f"{name}-{seed}")
    if name == "trace-range":
        return [log_uniform(rng, 5 * KB, 4 * GiB) for _ in range(n)]
    if name == "small-heavy":
        return [
            log_uniform(rng, 5 * KB, 2 * MiB) if rng.random() < 0.9 else log_uniform(rng, 2 * MiB, 4 * GiB)
            for _ in range(n)
        ]
    if name == "tiny-heavy":
        return [
            log_uniform(rng, 1 * KB, 64 * KiB) if rng.random() < 0.99 else log_uniform(rng, 2 * MiB, 1 * GiB)
            for _ in range(n)
        ]
    raise ValueError(name)


COLD = ColdShare()  # the stated assumption (module docstring, hycloud_core/cost/tiers.py)
ACCESS = FileAccess(reads_per_month=1.0, writes_per_month=0.1, cold=COLD)
TIERED = ("hybrid-tiers", "hybrid-tiers-chosen")
SUMMARY = ("hybrid", "hybrid-tiers", "hybrid-tiers-chosen", "all-s3", "all-s3-tiers", "s3-files")
MIN_TIERED = 128 * KiB


def all_s3_tiered(sizes: list[int], prices) -> dict:
    """All-S3 with the same Intelligent-Tiering and cold share: what a plain bucket could pay too."""
    tiered = [s for s in sizes if s >= MIN_TIERED]
    logical = sum(sizes)
    data = prices.gb(logical - sum(tiered)) * prices["s3_storage_gb_month"]
    data += prices.gb(sum(tiered)) * s3_tiered_gb_month(prices, COLD)
    data += len(tiered) * s3_tiered_object_month(prices, COLD)
    return {"data": data, "metadata": 0.0, "total": data, "unit": data / prices.gb(logical)}


def _row(cost, prices) -> dict:
    return {
        "data": cost.data_cost,
        "metadata": cost.metadata_cost,
        "total": cost.total,
        "unit": cost.unit_price(prices),
    }


def _with_segments(cost, sizes: list[int], prices, threshold: int):
    """Tiers plus cold small files packed into segments (docs/SEGMENTS.md) under the same cold share."""
    return with_lines(cost, packed_storage(sizes, prices, threshold, COLD))


def storage_rows(sizes: list[int], prices, threshold: int, chosen: int | None = None) -> dict:
    """Each layout's storage cost; with `chosen`, also HyCloud with tiers at that threshold."""
    dirs = max(1, len(sizes) // 100)
    usage = usage_from_sizes(sizes, threshold, dirs=dirs)
    out = {"files": usage.files, "logical_gb": prices.gb(usage.logical_bytes), "small_files": usage.efs_files}
    for layout, cost in compare(usage, prices).items():
        out[layout] = _row(cost, prices)
    out["hybrid-tiers"] = _row(
        _with_segments(tiered_cost(usage, prices, COLD), sizes, prices, threshold), prices
    )
    out["all-s3-tiers"] = all_s3_tiered(sizes, prices)
    out["hybrid_over_s3_pct"] = 100 * (out["hybrid"]["unit"] / out["all-s3"]["unit"] - 1)
    out["hybrid_vs_s3_files_pct"] = 100 * (out["hybrid"]["unit"] / out["s3-files"]["unit"] - 1)
    if chosen is not None:
        at_chosen = usage_from_sizes(sizes, chosen, dirs=dirs)
        out["hybrid-tiers-chosen"] = {
            **_row(_with_segments(tiered_cost(at_chosen, prices, COLD), sizes, prices, chosen), prices),
            "small_files": at_chosen.efs_files,
        }
    for layout in TIERED:
        if layout in out:
            out[f"{layout}_vs_s3_pct"] = 100 * (out[layout]["unit"] / out["all-s3"]["unit"] - 1)
            out[f"{layout}_vs_s3_files_pct"] = 100 * (out[layout]["unit"] / out["s3-files"]["unit"] - 1)
    return out


def per_gb_rows(prices) -> dict:
    """Cost of moving 1 GiB as one large file (and as 1,000 small files of 1 MiB) in each layout."""
    cases = {
        "large download": Operations(large_downloads=1, large_download_bytes=GiB),
        "large upload": Operations(large_uploads=1, large_upload_bytes=GiB),
        "small downloads": Operations(small_downloads=1024, small_download_bytes=GiB),
        "small uploads": Operations(small_uploads=1024, small_upload_bytes=GiB),
    }
    return {
        case: {layout: sum(operations_cost(ops, prices, layout).values()) for layout in LAYOUTS}
        for case, ops in cases.items()
    }


def modelled_relay(prices) -> float:
    """The relay per GB under the model's assumptions (cost.model.Assumptions), for comparison."""
    a = Assumptions()
    seconds = GiB / a.relay_bytes_per_second
    run = RelayStats(
        runs=1, bytes=GiB, mb_ms=int(a.relay_gb * 1024 * seconds * 1000), duration_ms=int(seconds * 1000)
    )
    return relay_cost(run, prices)["usd_per_gb"]


def measured_relay(table_name: str, prices) -> dict:
    import boto3

    return relay_cost(read_stats(boto3.resource("dynamodb").Table(table_name)), prices)


UNREAD_RATE = -math.log(0.8) / 30  # per day: 80% of files go a month unread (memoryless)


def synthetic_month(sizes: list[int], seed: int) -> Month:
    """The mix's files over a month: ages drawn for 80% a month unread, 20% read, 10% rewritten."""
    rng = random.Random(f"month-{seed}")
    files = []
    for size in sizes:
        reads = (rng.uniform(0, 30),) if rng.random() < 0.2 else ()
        writes = (rng.uniform(0, 30),) if rng.random() < 0.1 else ()
        files.append(FileMonth(size, rng.expovariate(UNREAD_RATE), reads, writes))
    return _with_metadata(files, len(sizes))


def _with_metadata(files: list[FileMonth], count: int) -> Month:
    touches = sum(len(f.reads) + len(f.writes) for f in files)
    return Month(files, dirs=max(1, count // 100), metadata_ops=touches)


def tree_files(root: Path) -> list[tuple[int, float]]:
    """(size, days since modified) of every non-empty regular file under `root`, one file system."""
    now, out = time.time(), []
    device = root.stat().st_dev
    for top, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if os.lstat(os.path.join(top, d)).st_dev == device]
        for name in names:
            try:
                st = os.lstat(os.path.join(top, name))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_size:
                out.append((st.st_size, max(0.0, (now - st.st_mtime) / 86400)))
    return out


def _poisson(rng: random.Random, mean: float) -> int:
    count, p, threshold = 0, rng.random(), math.exp(-mean)
    while p > threshold:
        count += 1
        p *= rng.random()
    return count


def _days(rng: random.Random, count: int) -> tuple[float, ...]:
    return tuple(sorted(rng.uniform(0, 30) for _ in range(count)))


def trace_month(tree: list[tuple[int, float]], seed: int) -> Month:
    """A team's month over a real tree: reads skewed to recent files, rewrites, 3% new files."""
    rng = random.Random(f"trace-{seed}")
    files = []
    for size, age in tree:
        reads = 2 * 30 / (30 + age)
        files.append(
            FileMonth(size, age, _days(rng, _poisson(rng, reads)), _days(rng, _poisson(rng, reads / 10)))
        )
    for _ in range(int(0.03 * len(tree))):
        size = rng.choice(tree)[0]
        created = rng.uniform(0, 30)
        later = tuple(d for d in _days(rng, _poisson(rng, 2.0)) if d > created)
        files.append(FileMonth(size, None, later, (created,)))
    return _with_metadata(files, len(files))


def bill_rows(month: Month, prices) -> dict:
    bills = month_bills(month, prices, THRESHOLD)
    files = list(month.files)
    out = {
        "files": len(files),
        "logical_gb": prices.gb(sum(f.size for f in files)),
        "reads": sum(len(f.reads) for f in files),
        "writes": sum(len(f.writes) for f in files),
        "metadata_ops": month.metadata_ops,
        "bills": {name: bill.to_dict(prices) for name, bill in bills.items()},
        "deployment_choice": deployment_choice(month, prices),
    }
    unit = {name: bill.unit_price(prices) for name, bill in bills.items()}
    for layout in VERSUS:
        out[f"{layout}_vs_s3_pct"] = 100 * (unit[layout] / unit["all-s3"] - 1)
        out[f"{layout}_vs_s3_files_pct"] = 100 * (unit[layout] / unit["s3-files"] - 1)
        out[f"{layout}_vs_s3_tiers_pct"] = 100 * (unit[layout] / unit["all-s3-tiers"] - 1)
    return out


def deployment_choice(month: Month, prices) -> dict:
    """The threshold a deployment holding this month's files would choose from its configured
    2 MiB (cost/threshold_choice.py, guard rails on): the files' sizes and ages, and their reads
    and writes by size band as the controller meters them (a file new this month counts as held
    all month)."""
    reads: Counter[int] = Counter()
    writes: Counter[int] = Counter()
    for f in month.files:
        reads[band(f.size)] += len(f.reads)
        writes[band(f.size)] += len(f.writes)
    files = [(f.size, f.before or 0.0) for f in month.files]
    picked = choose(Mix(files, Meter(0.0, dict(reads), dict(writes)), 30.0), prices, THRESHOLD)
    return {"threshold": picked.threshold, "best": picked.best, "reason": picked.reason}


BILL_NAMES = {
    "hybrid": "HyCloud today",
    "hybrid-tiers": "HyCloud with tiers",
    "hybrid-tiers-chosen": "with tiers, chosen threshold",
    "hybrid-tiers-mix": "with tiers, threshold per mix",
    "all-s3": "all-S3 Standard",
    "all-s3-tiers": "all-S3 Intelligent-Tiering",
    "s3-files": "S3 Files",
}


VERSUS = ("hybrid-tiers", "hybrid-tiers-chosen", "hybrid-tiers-mix")


def _no_egress(bill: dict) -> float:
    return sum(v for g, v in bill["groups"].items() if g != "transfer")


def where_it_goes(month: Month, prices, bills: dict) -> dict:
    """HyCloud with tiers at its threshold per mix, line by line, with EFS split by what holds it,
    and the floors no data placement can go under while every name has a file in EFS and every
    operation goes through API Gateway and the controller."""
    bill = bills["hybrid-tiers-mix"]
    t, std, gb = bill["threshold"], prices["efs_storage_gb_month"], prices.gb
    one_block = stub_blocks = unpacked = 0.0
    for f in month.files:
        if f.size >= t:
            continue
        if f.size <= metering.EFS_BLOCK_BYTES:
            one_block += metering.efs_data_bytes(f.size)
        elif packable(f.size, t):
            share = sum(packed_month(f).band_days) / 30.0
            stub_blocks += metering.EFS_BLOCK_BYTES * share
            unpacked += metering.efs_data_bytes(f.size) * (1 - share)
    storage, requests = bill["lines"]["storage"], bill["lines"]["requests"]
    efs = {
        "inodes, folders and link files (EFS Standard)": storage["efs_metadata"],
        "files of one 4 KiB block (EFS Standard: a stub would cost the same)": gb(one_block) * std,
        "stubs of packed files (a 4 KiB block each)": gb(stub_blocks) * std,
        "files of 4-128 KiB used in the last 30 days": gb(unpacked) * std,
    }
    efs["files of 128 KiB and more (IA and Archive)"] = storage["efs_data"] - sum(list(efs.values())[1:])
    s3 = {k: v for k, v in storage.items() if not k.startswith("efs")}
    segment_requests = {k: v for k, v in requests.items() if k.startswith("segment")}
    api = ("apigw_requests", "lambda_requests", "lambda_duration", "dynamodb_reads", "dynamodb_writes")
    api_usd = sum(bill["lines"][g].get(k, 0.0) for g in ("requests", "compute", "dynamodb") for k in api)
    files = len(month.files)
    floor_efs = gb(files * (metering.EFS_METADATA_BYTES + metering.EFS_BLOCK_BYTES)) * std
    floor_efs += gb(month.dirs * metering.efs_dir_bytes()) * std
    calls = {k: v for k, v in requests.items() if k not in segment_requests}
    return {
        "threshold": t,
        "efs": efs,
        "s3": s3,
        "requests": calls,
        "segment_requests": segment_requests,
        "compute": bill["lines"]["compute"],
        "dynamodb": bill["lines"]["dynamodb"],
        "total": _no_egress(bill),
        "floor_efs_names": floor_efs,
        "floor_api_path": api_usd,
        "all_s3": _no_egress(bills["all-s3"]),
        "s3_files": _no_egress(bills["s3-files"]),
        "files": files,
        "dirs": month.dirs,
    }


def where_markdown(w: dict) -> list[str]:
    floor = w["floor_efs_names"] + w["floor_api_path"]
    lines = [
        "",
        f"Where HyCloud with tiers' month goes on the trace (threshold per mix: {w['threshold']:,} bytes), "
        "USD, egress apart",
        "",
        "| part | line | USD/month |",
        "| --- | --- | ---: |",
    ]
    for part in ("efs", "s3", "requests", "segment_requests", "compute", "dynamodb"):
        for line, usd in sorted(w[part].items(), key=lambda kv: -abs(kv[1])):
            if abs(usd) >= 0.00005:
                lines.append(f"| {part} | {line} | {usd:.4f} |")
    lines += [
        f"| total | storage + requests + compute + DynamoDB | {w['total']:.4f} |",
        "",
        "Floors of this layout on the trace, USD/month: every one of its "
        f"{w['files']:,} files keeps an inode and one 4 KiB block in EFS Standard as a small file, a stub "
        f"or a link file, and each of its {w['dirs']:,} folders a directory (EFS's metering: 2 KiB of "
        f"metadata per file, data in 4 KiB blocks): {w['floor_efs_names']:.4f}; the month's calls through "
        f"API Gateway (REST, $3.50 per million), the controller Lambda and its DynamoDB reads and writes: "
        f"{w['floor_api_path']:.4f}. Together {floor:.4f}, against the whole of all-S3 Standard "
        f"({w['all_s3']:.4f}: objects priced per byte, clients calling S3 directly) and S3 Files "
        f"({w['s3_files']:.4f}).",
    ]
    return lines


def ratio_markdown(report: dict) -> list[str]:
    """The headline, first: HyCloud with tiers (threshold per mix) over each peer, whole bill."""
    lines = [
        "",
        "HyCloud with tiers (threshold per mix) over its peers, whole bill per GB-month (storage, requests, "
        "compute, DynamoDB; egress apart): under 1.00 is cheaper",
        "",
        "| mix | ratio to all-S3 Standard | ratio to S3 Files | ratio to all-S3 Intelligent-Tiering | "
        "HyCloud $/GB-month | threshold per mix (bytes) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for mix, row in report["bills"].items():
        unit = {k: b["unit_price_gb_month"] for k, b in row["bills"].items()}
        mine = unit["hybrid-tiers-mix"]
        lines.append(
            f"| {mix} | {mine / unit['all-s3']:.3f} | {mine / unit['s3-files']:.3f} | "
            f"{mine / unit['all-s3-tiers']:.3f} | {mine:.5f} | {row['bills']['hybrid-tiers-mix']['threshold']:,} |"
        )
    lines += [
        "",
        "What a deployment holding each mix would choose from its configured 2 MiB (guard rails on):",
        "",
    ]
    for mix, row in report["bills"].items():
        if "deployment_choice" in row:
            lines.append(f"- {mix}: {row['deployment_choice']['reason']}")
    return lines


def bill_markdown(report: dict) -> list[str]:
    fixed = report["idle"]["default (3 regions)"]["total"]
    lines = [
        "",
        "Whole bill of a month, $/GB-month (storage + requests + Lambda and Step Functions + DynamoDB; egress apart)",
        "",
        "| mix | " + " | ".join(BILL_NAMES[name] for name in BILL_LAYOUTS) + " |",
        "| --- | " + " | ".join("---:" for _ in BILL_LAYOUTS) + " |",
    ]
    for mix, row in report["bills"].items():
        cells = " | ".join(f"{row['bills'][name]['unit_price_gb_month']:.5f}" for name in BILL_LAYOUTS)
        lines.append(f"| {mix} | {cells} |")
    lines += ["", "HyCloud with tiers against the others, unit price of the whole bill", ""]
    lines += ["| mix | layout | vs all-S3 Standard | vs S3 Files | vs all-S3 Intelligent-Tiering |"]
    lines += ["| --- | --- | ---: | ---: | ---: |"]
    for mix, row in report["bills"].items():
        for layout in VERSUS:
            lines.append(
                f"| {mix} | {BILL_NAMES[layout]} | {row[f'{layout}_vs_s3_pct']:+.2f}% | "
                f"{row[f'{layout}_vs_s3_files_pct']:+.2f}% | {row[f'{layout}_vs_s3_tiers_pct']:+.2f}% |"
            )
    lines += ["", "The month's bill by group, USD (egress is the same bytes in every layout)", ""]
    lines += [
        "| mix | layout | threshold (bytes) | storage | requests | compute | dynamodb | egress | total |"
    ]
    lines += ["| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for mix, row in report["bills"].items():
        for name in BILL_LAYOUTS:
            b = row["bills"][name]
            g = b["groups"]
            t = f"{b['threshold']:,}" if b["threshold"] else "-"
            lines.append(
                f"| {mix} | {BILL_NAMES[name]} | {t} | {g['storage']:,.2f} | {g['requests']:,.2f} | "
                f"{g['compute']:,.2f} | {g['dynamodb']:,.2f} | {g['transfer']:,.2f} | "
                f"{sum(g.values()):,.2f} |"
            )
    if "where" in report:
        lines += where_markdown(report["where"])
    trace = report.get("trace")
    lines += [
        "",
        "Files, GiB, reads, writes and metadata operations of each month: "
        + "; ".join(
            f"{mix} {r['files']:,} files, {r['logical_gb']:,.1f} GiB, {r['reads']:,} reads, {r['writes']:,} writes, "
            f"{r['metadata_ops']:,} metadata ops"
            for mix, r in report["bills"].items()
        )
        + ".",
        "",
        (
            f"Trace: {trace['files']:,} regular files under {trace['root']} (median age {trace['median_age_days']:.0f} days, "
            f"{trace['unread_30_share']:.0%} of bytes older than 30 days). "
            if trace
            else ""
        )
        + f"The deployment's fixed cost, whatever is stored, is apart: ${fixed:.2f} a month for the default "
        "three regions (idle table below). Storage is charged for the whole month to every file alive at its "
        "end; S3 Files holds each written byte on file-system storage for its 30-day window and streams larger "
        "reads from the bucket.",
    ]
    return lines


def idle_rows(prices) -> dict:
    """The idle monthly cost of each profile, by item and by stack."""
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    rows = {}
    for name, overrides in IDLE_PROFILES.items():
        shape = shape_from_context({**context, **overrides})
        rows[name] = {"regions": shape.regions, **idle_monthly(shape, prices).to_dict()}
    return rows


def idle_markdown(idle: dict) -> list[str]:
    lines = ["", "Idle deployment: fixed cost per month, USD (nothing stored, no requests)", ""]
    lines += ["| profile | stacks | " + " | ".join(IDLE_ITEMS) + " | total |"]
    lines += ["| --- | ---: | " + " | ".join("---:" for _ in IDLE_ITEMS) + " | ---: |"]
    for name, row in idle.items():
        cells = " | ".join(f"{row['lines'][item]:.2f}" for item in IDLE_ITEMS)
        lines.append(f"| {name} | {len(row['by_stack'])} | {cells} | {row['total']:.2f} |")
    lines += ["", "| profile | stack | " + " | ".join(IDLE_ITEMS) + " | total |"]
    lines += ["| --- | --- | " + " | ".join("---:" for _ in IDLE_ITEMS) + " | ---: |"]
    for name, row in idle.items():
        for stack, items in row["by_stack"].items():
            cells = " | ".join(f"{items[item]:.2f}" for item in IDLE_ITEMS)
            lines.append(f"| {name} | {stack} | {cells} | {sum(items.values()):.2f} |")
    a = next(iter(idle.values()))
    lines += [
        "",
        f"A month is {a['assumptions']['hours_per_month']} hours. Interface endpoint: Lambda in each "
        "VPC, two AZs (Step Functions and other regions go through the reach function). Scheduled runs: the functions' memory for "
        f"{a['assumptions']['idle_run_seconds']:g} s each plus the request; logs {a['assumptions']['log_bytes_per_run']} "
        f"bytes per run ingested and kept 30 days. Zero when idle: {', '.join(a['zero_when_idle'])} "
        "(CloudFront has no monthly fee on the pay-as-you-go plan; an empty EFS holds a few KiB; DynamoDB on "
        "demand bills requests and storage). Provisioned concurrency is off by default "
        "(`-c hycloud:provisionedConcurrency=N` adds N warm relay and delta functions at home).",
    ]
    return lines


def tiers_markdown(report: dict) -> list[str]:
    t = report["tiers"]
    cold = t["cold_share"]
    lines = [
        "",
        "Storage $/GB-month by mix: HyCloud today, with tiers (2 MiB, and the threshold chosen by cost), all-S3 (Standard and Intelligent-Tiering), S3 Files",
        "",
    ]
    lines += [
        "| distribution | HyCloud today | HyCloud with tiers | with tiers, chosen threshold | all-S3 Standard | all-S3 Intelligent-Tiering | S3 Files |"
    ]
    lines += ["| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, row in report["distributions"].items():
        lines.append(f"| {name} | " + " | ".join(f"{row[layout]['unit']:.5f}" for layout in SUMMARY) + " |")
    lines += [
        "",
        f"Cold share assumed: {cold['after_30_days']:.0%} of tierable bytes unread 30 days, {cold['after_90_days']:.1%} 90 days, "
        f"{cold['after_180_days']:.1%} 180 days (AWS's 80% of files unread in a month, carried forward monthly); "
        f"moves and one cold read per byte spread over {cold['months_held']:g} months. Files and objects under 128 KiB "
        f"and all metadata stay in the standard tiers. Threshold chosen by cost for a file read {t['access']['reads_per_month']:g} "
        f"time a month and rewritten {t['access']['writes_per_month']:g} times a month: {t['chosen_threshold']:,} bytes "
        f"(EFS inode and blocks by tier with Elastic reads and writes, against a link file, an object record, S3 by tier, "
        "a PUT per write and a GET per read). Requests and jobs are not in these storage figures. "
        "The saving is the tiers': a plain bucket under the same Intelligent-Tiering and cold share "
        "(all-S3 Intelligent-Tiering) pays about as little, and S3 Files' bucket could too.",
    ]
    return lines


def markdown(report: dict) -> str:
    p = report["prices"]
    lines = [
        f"# Storage cost: HyCloud vs all-S3 vs all-EFS vs Amazon S3 Files ({p['region']} list prices, {p['date']})",
        "",
        f"{report['files']:,} synthetic files per distribution, threshold {THRESHOLD // MiB} MiB, "
        "one directory per 100 files. Seed 000 Table II (real trace): "
        f"S3 {SEED_TABLE_II['all-s3']}, EFS {SEED_TABLE_II['all-efs']}, HyCloud {SEED_TABLE_II['hybrid']} $/GB-month (+0.43%).",
        *ratio_markdown(report),
        "",
        "Storage alone, by distribution:",
        "",
        "| distribution | data (GiB) | small files | layout | file data $/mo | metadata $/mo | total $/mo | $/GB-month |",
        "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for name, row in report["distributions"].items():
        for layout in ("all-s3", "all-s3-tiers", "all-efs", "s3-files", "hybrid", *TIERED):
            c = row[layout]
            lines.append(
                f"| {name} | {row['logical_gb']:,.0f} | {row['small_files']:,} | {layout} | {c['data']:,.2f} | "
                f"{c['metadata']:,.4f} | {c['total']:,.2f} | {c['unit']:.5f} |"
            )
        lines.append(f"| {name} | | | hybrid over S3 | | | | +{row['hybrid_over_s3_pct']:.2f}% |")
        lines.append(f"| {name} | | | hybrid vs S3 Files | | | | {row['hybrid_vs_s3_files_pct']:+.2f}% |")
        for layout in TIERED:
            lines.append(f"| {name} | | | {layout} vs all-S3 | | | | {row[f'{layout}_vs_s3_pct']:+.2f}% |")
            lines.append(
                f"| {name} | | | {layout} vs S3 Files | | | | {row[f'{layout}_vs_s3_files_pct']:+.2f}% |"
            )
    lines += tiers_markdown(report)
    lines += ["", "Threshold sweep (small-heavy): hybrid $/GB-month and increase over all-S3", ""]
    lines += ["| threshold | small files | $/GB-month | over S3 |", "| ---: | ---: | ---: | ---: |"]
    for t, row in report["threshold_sweep"].items():
        lines.append(
            f"| {t} | {row['small_files']:,} | {row['hybrid']['unit']:.5f} | +{row['hybrid_over_s3_pct']:.2f}% |"
        )
    lines += ["", "Cost of moving 1 GiB (requests, compute, EFS Elastic throughput, egress), USD", ""]
    lines += ["| case | HyCloud | all-S3 | all-EFS | S3 Files |", "| --- | ---: | ---: | ---: | ---: |"]
    for case, row in report["per_gib"].items():
        cells = " | ".join(f"{row[layout]:.4f}" for layout in LAYOUTS)
        lines.append(f"| {case} | {cells} |")
    if measured := report.get("relay_measured"):
        modelled = report["relay_modelled_usd_per_gb"]
        lines += ["", "Relay cost per GB measured on the deployment (its runs' bytes and durations)", ""]
        lines += [
            "| runs | bytes | seconds | MiB/s | $/GB measured | $/GB modelled (1 GB function, 100 MiB/s) |"
        ]
        lines += ["| ---: | ---: | ---: | ---: | ---: | ---: |"]
        per_gb = "-" if measured["usd_per_gb"] is None else f"{measured['usd_per_gb']:.4f}"
        lines.append(
            f"| {measured['runs']} | {measured['bytes']:,} | {measured['seconds']:.1f} | "
            f"{measured['mib_per_second']} | {per_gb} | {modelled:.4f} |"
        )
    lines += bill_markdown(report)
    lines += idle_markdown(report["idle"])
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=514_095)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--table", help="a deployment's DynamoDB table: price its measured relay runs")
    parser.add_argument("--trace-root", type=Path, default=Path("/usr"), help="the package tree of the trace")
    args = parser.parse_args()
    prices = load_prices()
    report = {
        "prices": {"region": prices.region, "date": prices.date},
        "files": args.files,
        "seed": args.seed,
        "distributions": {},
        "threshold_sweep": {},
    }
    chosen = choose_threshold(prices, ACCESS)
    report["tiers"] = {
        "cold_share": COLD.to_dict(),
        "access": {"reads_per_month": ACCESS.reads_per_month, "writes_per_month": ACCESS.writes_per_month},
        "chosen_threshold": chosen,
    }
    report["bills"] = {}
    for name in ("trace-range", "small-heavy", "tiny-heavy"):
        sizes = distribution(name, args.files, args.seed)
        report["distributions"][name] = storage_rows(sizes, prices, THRESHOLD, chosen)
        report["bills"][name] = bill_rows(synthetic_month(sizes, args.seed), prices)
        if name == "small-heavy":
            for t in (256 * KiB, 1 * MiB, 2 * MiB, 8 * MiB, 64 * MiB):
                label = f"{t // KiB} KiB" if t < MiB else f"{t // MiB} MiB"
                report["threshold_sweep"][label] = storage_rows(sizes, prices, t)
    tree = tree_files(args.trace_root)
    traced = trace_month(tree, args.seed)
    report["bills"]["month in a day (trace)"] = bill_rows(traced, prices)
    report["where"] = where_it_goes(traced, prices, report["bills"]["month in a day (trace)"]["bills"])
    ages = sorted(age for _, age in tree)
    report["trace"] = {
        "root": str(args.trace_root),
        "files": len(tree),
        "median_age_days": ages[len(ages) // 2],
        "unread_30_share": sum(s for s, a in tree if a >= 30) / sum(s for s, _ in tree),
    }
    report["per_gib"] = per_gb_rows(prices)
    report["relay_modelled_usd_per_gb"] = modelled_relay(prices)
    report["idle"] = idle_rows(prices)
    if args.table:
        report["relay_measured"] = measured_relay(args.table, prices)
    text = markdown(report)
    result_files.write("cost", report, text)
    print(text)


if __name__ == "__main__":
    main()
