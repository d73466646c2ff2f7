"""Coded-block jobs (repair, migration) as background work in the FOP queue (docs/SCHEDULING.md).

They restore redundancy or follow a ring change: nothing a client waits on to read a file (a
degraded read works meanwhile), so they run behind user transfers, and each holds one worker
while it runs, so they never oversubscribe the deployment's capacity with user jobs.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from .queue import BACKGROUND, QueueStore, SchedConfig

OPERATOR = "operator"  # the queue's user for jobs over every user's files


def queue_coded_job(
    store: QueueStore,
    machine: str,
    job_input: dict[str, Any],
    config: SchedConfig,
    rate_bps: float,
    user: str = OPERATOR,
    nbytes: int | None = None,
) -> str:
    """Queue a job on the repair state machine; returns its execution name.

    `nbytes` is what it moves at `rate_bps`; unknown (an operator's job over every user) counts as
    the longest t_T the queue knows, W. No path markers: the job takes each file's lease itself."""
    name = uuid.uuid4().hex
    store.enqueue(
        name,
        machine,
        json.dumps(job_input),
        user,
        (),
        nbytes or 0,
        1.0 / rate_bps,
        config,
        priority=BACKGROUND,
        extra_s=config.max_wait_s if nbytes is None else 0.0,
    )
    return name
