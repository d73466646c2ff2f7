"""Logs, metrics and traces shared by every cloud function.

One Logger (JSON lines), one Metrics (CloudWatch embedded metric format, namespace `HyCloud`) and
one Tracer (X-Ray) per function process, so every function logs the same keys and publishes to the
same namespace. Each function's service name comes from POWERTOOLS_SERVICE_NAME, set per function
by the CDK app. Tracing is switched off with POWERTOOLS_TRACE_DISABLED where no X-Ray daemon runs.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

NAMESPACE = "HyCloud"
CORRELATION_HEADER = "x-correlation-id"

logger = Logger()
metrics = Metrics(namespace=NAMESPACE)


def _tracer() -> Tracer | None:
    """Powertools' Tracer, or None where tracing is off: building one imports the X-Ray SDK
    (about half a second of a cold start) even when it is then disabled."""
    if os.environ.get("POWERTOOLS_TRACE_DISABLED", "").lower() in ("1", "true", "yes", "on"):
        return None
    from aws_lambda_powertools import Tracer

    return Tracer()


tracer = _tracer()

# a function that published nothing in an invocation still flushes the cold-start metric
warnings.filterwarnings("ignore", message="No application metrics to publish")


def observed(
    handler: Callable[[Any, Any], Any] | None = None, *, correlation_id_path: str | None = None
) -> Callable[..., Any]:
    """Decorate a Lambda handler: context in every log line, metrics flushed, a trace segment.

    `correlation_id_path` (a JMESPath into the event) names the id every log line carries.
    """

    def wrap(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        traced = tracer.capture_lambda_handler(fn, capture_response=False) if tracer else fn
        measured = metrics.log_metrics(traced, capture_cold_start_metric=True)
        return logger.inject_lambda_context(
            measured, correlation_id_path=correlation_id_path, clear_state=True
        )

    return wrap(handler) if handler else wrap


@dataclass
class Timer:
    ms: float = 0.0


@contextmanager
def job_duration(job: str) -> Iterator[Timer]:
    """Publish how long a job's task ran (`JobDuration`, ms, by job), whether it succeeded or not."""
    started, timer = time.monotonic(), Timer()
    try:
        yield timer
    finally:
        timer.ms = (time.monotonic() - started) * 1000
        with_dimension("job", job)
        metrics.add_metric("JobDuration", MetricUnit.Milliseconds, timer.ms)


def with_dimension(name: str, value: str) -> None:
    """Add a dimension to this invocation's metrics (Powertools applies it to all of them)."""
    metrics.add_dimension(name=name, value=value)


def count_bytes(name: str, n: int) -> None:
    metrics.add_metric(name, MetricUnit.Bytes, max(0, n))
