"""Lambda's per-invocation CloudWatch metrics, left out of the local cloud.

LocalStack records `Invocations`/`Errors` for every Lambda invocation by starting a thread that
sends `put_metric_data` back through its own gateway. Nothing of HyCloud or its tests reads those
metrics (the app defines no alarm or dashboard on them), yet on a 2-core machine that round trip,
made in LocalStack's single process for every API request and job step, took about a twentieth
of the process's time under test load (py-spy, GIL samples). AWS records these metrics outside
the function and at no cost to it, so dropping them locally changes nothing an app can observe.
"""

from __future__ import annotations

import logging

LOG = logging.getLogger(__name__)


METRIC_THREAD = "record-cloudwatch-metric"  # the name prefix of LocalStack's recording threads


def install_patches() -> None:
    from localstack.services.lambda_.invocation import version_manager

    start_thread = version_manager.start_thread

    def without_metrics(func, *args, name: str | None = None, **kwargs):
        if name and name.startswith(METRIC_THREAD):
            return None
        return start_thread(func, *args, name=name, **kwargs)

    version_manager.start_thread = without_metrics
    LOG.info("Lambda invocation metrics are not recorded in CloudWatch")
