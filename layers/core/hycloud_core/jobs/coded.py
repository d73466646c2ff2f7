"""Coded-block jobs (repair, migration) as background work in the FOP queue (docs/SCHEDULING.md).

They restore redundancy or follow a ring change: nothing a client waits on to read a file (a
degraded read works meanwhile), so they run behind user transfers, and each holds one worker
while it runs, so they never oversubscribe the deployment's capacity with user jobs.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from .queue import BACKGROUND, QueueEntry, QueueStore, SchedConfig

OPERATOR = "operator"  # the queue's user for jobs over every user's files


@dataclass(frozen=True, kw_only=True)
class CodedJob:
    """A job on the repair state machine `machine`, told `input`, for `user`. `nbytes` is what it
    moves at `rate_bps`; unknown (None: an operator's job over every user) it counts as the
    longest t_T the queue knows, W."""

    machine: str
    input: dict[str, Any]
    rate_bps: float
    user: str = OPERATOR
    nbytes: int | None = None


def queue_coded_job(store: QueueStore, coded: CodedJob, config: SchedConfig) -> str:
    """Queue a coded job as background work; returns its execution name. No path markers: the
    job takes each file's lease itself."""
    name = uuid.uuid4().hex
    entry = QueueEntry(
        job=name,
        machine=coded.machine,
        input=json.dumps(coded.input),
        user=coded.user,
        size=coded.nbytes or 0,
        seconds_per_byte=1.0 / coded.rate_bps,
        extra_s=config.max_wait_s if coded.nbytes is None else 0.0,
        priority=BACKGROUND,
    )
    store.enqueue(entry, config)
    return name
