"""Defaults shared by every HyCloud function: Python 3.12 on the core layer, one asset folder each,
its own log group with a retention, and X-Ray tracing.

Context: `hycloud:logRetentionDays` (default 30; logs are otherwise kept forever and billed
monthly) and `hycloud:tracing` (default true; the local cloud has no X-Ray and turns it off).
"""

from pathlib import Path
from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from hycloud_core.reach import ENV_REACH

DEFAULT_RETENTION_DAYS = 30
RETENTION = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
}


def log_retention(scope: Construct) -> logs.RetentionDays:
    days = int(scope.node.try_get_context("hycloud:logRetentionDays") or DEFAULT_RETENTION_DAYS)
    if days not in RETENTION:
        raise ValueError(f"hycloud:logRetentionDays must be one of {sorted(RETENTION)}, not {days}")
    return RETENTION[days]


def tracing_on(scope: Construct) -> bool:
    return str(scope.node.try_get_context("hycloud:tracing")).lower() not in ("false", "0", "off")


def python_function(
    scope: Construct,
    id: str,
    *,
    code_dir: Path,
    layer: lambda_.ILayerVersion,
    environment: dict[str, str],
    timeout_s: int = 29,
    memory_mb: int = 1024,
    **extra: Any,
) -> lambda_.Function:
    reach: lambda_.IFunction | None = extra.pop("reach", None)  # EfsVolume.mount(): a function in the VPC
    traced = tracing_on(scope)
    # A group of its own with a retention (Lambda's default group never expires). CDK names it, so
    # a stack whose functions already wrote to /aws/lambda/<name> still updates: creating a group
    # of that name would fail. (LocalStack ignores the logging config and keeps /aws/lambda/<name>.)
    group = logs.LogGroup(
        scope, f"{id}Logs", retention=log_retention(scope), removal_policy=RemovalPolicy.DESTROY
    )
    fn = lambda_.Function(
        scope,
        id,
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="handler.handler",
        code=lambda_.Code.from_asset(str(code_dir), exclude=["__pycache__", "*.pyc"]),
        layers=[layer],
        timeout=Duration.seconds(timeout_s),
        memory_size=memory_mb,
        tracing=lambda_.Tracing.ACTIVE if traced else lambda_.Tracing.DISABLED,
        log_group=group,
        environment={
            "POWERTOOLS_SERVICE_NAME": f"hycloud-{code_dir.name}",
            "POWERTOOLS_METRICS_NAMESPACE": "HyCloud",
            **({} if traced else {"POWERTOOLS_TRACE_DISABLED": "true"}),
            **environment,
        },
        **extra,
    )
    if reach is not None:
        fn.add_environment(ENV_REACH, reach.function_name)
        reach.grant_invoke(fn)
    return fn
