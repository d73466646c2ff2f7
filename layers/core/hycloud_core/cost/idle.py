"""What a deployment costs per month before anyone stores or moves a byte: its fixed charges.

A deployment's *shape* (its stacks, and in each the VPC, endpoints, NAT gateways, warm capacity,
alarms, keys and scheduled functions) is built from the CDK context by `shape_from_context`, with
the same defaults as the CDK app (infra/hycloud_infra; tests/infra/test_idle_shape.py checks the
shape against the synthesized templates), and priced by `idle_monthly` from prices.json.

Charged whether used or not: interface endpoints (per endpoint per AZ-hour), NAT gateways (per
hour), provisioned concurrency (per GB-second configured), CloudWatch alarms and customer-managed
KMS keys (per month); and the scheduled functions' runs (cache upkeep, namespace upkeep, the job
dispatcher's backstop, the coded-block sweep, the standby replication), each priced at its
function's memory for `IDLE_RUN_SECONDS` plus its request, with the log lines it writes.

Nothing when idle: EFS (metered by bytes stored; an empty file system holds a few KiB), DynamoDB
on demand (requests and storage; the first 25 GB stored are free), S3, API Gateway and CloudFront
(per request and per GB; no monthly fee on the pay-as-you-go plan), gateway endpoints for S3 and
DynamoDB, EventBridge schedules (scheduled rules are free), EFS encryption (an AWS-managed key).
The scheduled runs' few DynamoDB reads (well under a cent a month) are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .prices import Prices

HOURS_PER_MONTH = 730  # AWS's pricing convention for a month of hourly charges
MINUTES_PER_MONTH = HOURS_PER_MONTH * 60
IDLE_RUN_SECONDS = 1.0  # billed duration assumed for a scheduled run that finds nothing to do
LOG_BYTES_PER_RUN = 2048  # START/END/REPORT lines and a few structured lines per run
DEFAULT_REGIONS = ("us-east-1",)
DEFAULT_INSTANCE_NAME = "HyCloud-Instance"
AZS_PER_VPC = 2  # constructs/efs_volume.py: max_azs=2
INTERFACE_ENDPOINTS = ("lambda",)  # constructs/efs_volume.py: interface endpoints of every VPC
NAT_GATEWAYS = 0  # constructs/efs_volume.py: isolated subnets only
RELAY_MB, DELTA_MB, UPKEEP_MB, DISPATCHER_MB, REPAIR_MB, REPLICATOR_MB = 1769, 3008, 512, 512, 1024, 1024
LOG_RETENTION_DAYS = 30  # constructs/python_function.py default
ZERO_WHEN_IDLE = ("efs", "dynamodb", "s3", "api_gateway", "cloudfront", "gateway_endpoints", "schedules")


@dataclass(frozen=True)
class Schedule:
    """A function run on a timer: its name, runs per month and memory."""

    name: str
    every_minutes: float
    memory_mb: int

    @property
    def runs_per_month(self) -> float:
        return MINUTES_PER_MONTH / self.every_minutes


@dataclass(frozen=True)
class Warm:
    """Provisioned concurrency on one function: `instances` kept initialised."""

    name: str
    instances: int
    memory_mb: int


@dataclass(frozen=True)
class StackShape:
    name: str
    region: str
    azs: int = AZS_PER_VPC
    interface_endpoints: tuple[str, ...] = INTERFACE_ENDPOINTS
    nat_gateways: int = NAT_GATEWAYS
    warm: tuple[Warm, ...] = ()
    alarms: int = 0
    kms_keys: int = 0
    schedules: tuple[Schedule, ...] = ()


@dataclass(frozen=True)
class Shape:
    stacks: tuple[StackShape, ...]
    log_retention_days: int = LOG_RETENTION_DAYS

    @property
    def regions(self) -> list[str]:
        return list(dict.fromkeys(s.region for s in self.stacks))


def _regions(value: object) -> list[str]:
    """`hycloud:regions` as infra/hycloud_infra/regions.py reads it: a list or a comma-separated string."""
    items = value if isinstance(value, list | tuple) else str(value or "").split(",")
    return [str(i).strip() for i in items if str(i).strip()] or list(DEFAULT_REGIONS)


def _standby(value: object) -> str | None:
    region = str(value or "").strip()
    return None if region.lower() in ("", "none", "false", "off") else region


def shape_from_context(context: dict[str, Any]) -> Shape:
    """The shape the CDK app builds from `context` (cdk.json's, with any `-c` overrides)."""
    return deployment_shape(
        _regions(context.get("hycloud:regions")),
        standby=_standby(context.get("hycloud:standby")),
        warm=int(context.get("hycloud:provisionedConcurrency") or 0),
        standby_every_minutes=_int_or(context.get("hycloud:standbyEveryMinutes"), 1),
        instance_name=context.get("hycloud:instanceName") or DEFAULT_INSTANCE_NAME,
        log_retention_days=int(context.get("hycloud:logRetentionDays") or LOG_RETENTION_DAYS),
    )


def _int_or(value: str | int | None, default: int) -> int:
    return default if value is None else int(value)


def deployment_shape(
    regions: list[str],
    *,
    standby: str | None = None,
    warm: int = 0,
    standby_every_minutes: int = 1,
    instance_name: str = DEFAULT_INSTANCE_NAME,
    log_retention_days: int = LOG_RETENTION_DAYS,
) -> Shape:
    """Home stack in `regions[0]`, a data instance stack in each other region, and the standby's."""
    home, *others = regions
    upkeep = Schedule("cache upkeep", 5, UPKEEP_MB)
    dispatcher = Schedule("job dispatcher backstop", 2, DISPATCHER_MB)
    home_runs = [upkeep, Schedule("namespace upkeep", 60, UPKEEP_MB), dispatcher]
    if others:
        home_runs.append(Schedule("coded block sweep", 60, REPAIR_MB))
    if standby and standby_every_minutes > 0:
        home_runs.append(Schedule("standby replication", standby_every_minutes, REPLICATOR_MB))
    warm_fns = (Warm("relay", warm, RELAY_MB), Warm("delta", warm, DELTA_MB)) if warm > 0 else ()
    stacks = [StackShape(instance_name, home, warm=warm_fns, schedules=tuple(home_runs))]
    stacks += [StackShape(f"{instance_name}-{r}", r, schedules=(upkeep,)) for r in others]
    if standby:
        stacks.append(StackShape(f"{instance_name}-Standby", standby, schedules=(dispatcher,)))
    return Shape(tuple(stacks), log_retention_days=log_retention_days)


@dataclass(frozen=True)
class IdleCost:
    """USD per month by item, in total and per stack."""

    by_stack: dict[str, dict[str, float]]
    runs_per_month: float
    assumptions: dict[str, float] = field(default_factory=dict)

    @property
    def lines(self) -> dict[str, float]:
        items: dict[str, float] = {}
        for stack in self.by_stack.values():
            for name, usd in stack.items():
                items[name] = items.get(name, 0.0) + usd
        return items

    @property
    def total(self) -> float:
        return sum(self.lines.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": round(self.total, 4),
            "lines": {k: round(v, 4) for k, v in self.lines.items()},
            "by_stack": {s: {k: round(v, 4) for k, v in lines.items()} for s, lines in self.by_stack.items()},
            "runs_per_month": round(self.runs_per_month),
            "assumptions": dict(self.assumptions),
            "zero_when_idle": list(ZERO_WHEN_IDLE),
        }


def _gb(memory_mb: int) -> float:
    return memory_mb / 1024  # Lambda bills GB-seconds of configured memory in units of 1024 MB


def stack_idle(stack: StackShape, prices: Prices, log_retention_days: int) -> dict[str, float]:
    runs = sum(s.runs_per_month for s in stack.schedules)
    run_cost = sum(
        s.runs_per_month
        * (
            _gb(s.memory_mb) * IDLE_RUN_SECONDS * prices["lambda_gb_second"]
            + prices["lambda_per_million"] / 1e6
        )
        for s in stack.schedules
    )
    log_gb = prices.gb(runs * LOG_BYTES_PER_RUN)
    kept_months = min(log_retention_days, 30) / 30  # a month's logs, or less, are held at a time
    return {
        "interface_endpoints": len(stack.interface_endpoints)
        * stack.azs
        * HOURS_PER_MONTH
        * prices["vpc_interface_endpoint_az_hour"],
        "nat_gateways": stack.nat_gateways * HOURS_PER_MONTH * prices["nat_gateway_hour"],
        "provisioned_concurrency": sum(
            w.instances * _gb(w.memory_mb) * HOURS_PER_MONTH * 3600 * prices["lambda_provisioned_gb_second"]
            for w in stack.warm
        )
        or 0.0,
        "scheduled_runs": run_cost,
        "logs": log_gb
        * (prices["cloudwatch_logs_ingest_gb"] + kept_months * prices["cloudwatch_logs_storage_gb_month"]),
        "alarms": stack.alarms * prices["cloudwatch_alarm_month"],
        "kms_keys": stack.kms_keys * prices["kms_key_month"],
    }


def idle_monthly(shape: Shape, prices: Prices) -> IdleCost:
    """The deployment's fixed monthly cost at `prices`, broken down by item and stack."""
    return IdleCost(
        by_stack={s.name: stack_idle(s, prices, shape.log_retention_days) for s in shape.stacks},
        runs_per_month=sum(r.runs_per_month for s in shape.stacks for r in s.schedules),
        assumptions={
            "hours_per_month": HOURS_PER_MONTH,
            "idle_run_seconds": IDLE_RUN_SECONDS,
            "log_bytes_per_run": LOG_BYTES_PER_RUN,
        },
    )
