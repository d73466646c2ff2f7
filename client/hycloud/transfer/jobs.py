"""Following a job the cloud runs (a delta, a relay copy, a tree operation, a staged bundle) to
its end: one loop for all of them.

Each status request is a long poll: the controller holds it up to `wait` seconds and answers as
soon as the job ends, so a finished job is seen at once and a running one costs one request per
`wait`. A job whose status endpoint answers at once can be polled with a growing pause between
requests instead (`pause_s`). It lives in the transport layer (beside the transfers that start
most jobs) so the SDK and the transfers both follow jobs the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from hycloud_core.errors import HyCloudError

from ..http import Transport

Status = dict[str, Any]


@dataclass(frozen=True)
class JobPoll:
    """Where a job's status is asked for, and how patiently."""

    route: str  # the status endpoint (GET)
    params: Mapping[str, Any]  # what names the job there
    wait_s: float  # each request held by the controller this long at most
    running: Collection[str] = ("running",)  # states of a job not yet ended ...
    ended: Collection[str] | None = None  # ... or, when given, every state but these
    timeout_s: float | None = None  # give up (TimeoutError) after this long; None: never
    pause_s: float = 0.0  # sleep before each request: this, growing by `pause_growth` ...
    pause_growth: float = 1.5
    max_pause_s: float = 2.0  # ... up to this

    def runs(self, status: Status) -> bool:
        state = status.get("state")
        return state not in self.ended if self.ended is not None else state in self.running


class JobTimeout(HyCloudError):
    """The job did not end within the poll's timeout; `last` is the last status seen."""

    def __init__(self, last: Status, timeout_s: float) -> None:
        super().__init__(f"the job did not finish in {timeout_s:g}s", code="job-timeout")
        self.last = last


def follow_job(
    http: Transport,
    poll: JobPoll,
    status: Status,
    on_status: Callable[[Status], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Status:
    """Poll from `status` (the answer that started or found the job) until the job's state is no
    longer running; the final status. `on_status` sees every status, the first and last included
    (progress, a queue place); JobTimeout when the poll's timeout passes first."""
    deadline = None if poll.timeout_s is None else clock() + poll.timeout_s
    pause = poll.pause_s
    if on_status is not None:
        on_status(status)
    while poll.runs(status):
        if deadline is not None and clock() > deadline:
            raise JobTimeout(status, poll.timeout_s or 0.0)
        if pause:
            sleep(pause)
            pause = min(pause * poll.pause_growth, poll.max_pause_s)
        status = http.json("GET", poll.route, params={**poll.params, "wait": poll.wait_s})
        if on_status is not None:
            on_status(status)
    return status
