"""Provisioned concurrency for the job functions, as a deployment option (`-c hycloud:provisionedConcurrency=N`).

A delta job's cold start (a new container importing the core layer) costs seconds; N instances
kept initialised remove it. It is paid for whether used or not: in us-east-1, $0.0000041667 per
GB-second provisioned, so one instance of the delta function (3008 MB) costs about $32 a month
and one of the relay function (1769 MB) about $19 (invocations on it are then billed at
$0.0000097222 instead of $0.0000166667 per GB-second). Off (0) by default, and never deployed to
the local cloud, where it would change nothing.
"""

from __future__ import annotations

from aws_cdk import aws_lambda as lambda_


def warm_target(fn: lambda_.Function, instances: int) -> lambda_.IFunction:
    """`fn` itself, or with `instances` > 0 an alias of its current version kept that warm."""
    if instances <= 0:
        return fn
    return lambda_.Alias(
        fn,
        "Warm",
        alias_name="warm",
        version=fn.current_version,
        provisioned_concurrent_executions=instances,
    )
