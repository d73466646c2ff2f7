"""What the deployment's functions logged as errors while a test ran, for that test's failure report.

The local cloud's logs go when it stops (a `make test` run stops it), so a failure that only shows
as "internal error" on a loaded CI machine would keep its cause to itself without this.
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

MARKERS = ('"level":"ERROR"', '"level": "ERROR"', "Traceback", "Task timed out")
MAX_GROUPS, MAX_LINES, LINE_CHARS, TRACEBACK_LINES = 60, 40, 4000, 30


def _logs(env: dict[str, str]) -> Any:
    return boto3.client(
        "logs",
        endpoint_url=env["AWS_ENDPOINT_URL"],
        region_name=env.get("AWS_DEFAULT_REGION", "us-east-1"),
        aws_access_key_id=env.get("AWS_ACCESS_KEY_ID", "test"),
        aws_secret_access_key=env.get("AWS_SECRET_ACCESS_KEY", "test"),
        config=Config(connect_timeout=3, read_timeout=5, retries={"max_attempts": 1}),
    )


def logged_since(env: dict[str, str], since_s: float) -> list[str]:
    """Error lines of every function's log group since `since_s` (epoch seconds), oldest first."""
    logs, found = _logs(env), []
    groups = [
        g["logGroupName"]
        for page in logs.get_paginator("describe_log_groups").paginate(logGroupNamePrefix="/aws/lambda/")
        for g in page["logGroups"]
    ]
    for group in groups[:MAX_GROUPS]:
        events = logs.filter_log_events(logGroupName=group, startTime=int(since_s * 1000), limit=1000)
        found += [(t, f"{group}: {text}") for t, text in _errors(events.get("events", []))]
    return [line for _t, line in sorted(found)[-MAX_LINES:]]


def _errors(events: list[dict]) -> list[tuple[int, str]]:
    """The error events; a plain traceback comes a line an event, so the lines after it in its
    stream are joined to it."""
    out = []
    for i, event in enumerate(events):
        if not any(marker in event["message"] for marker in MARKERS):
            continue
        text = event["message"]
        if text.startswith("Traceback"):
            stream = event.get("logStreamName")
            rest = []
            for later in events[i + 1 : i + 1 + TRACEBACK_LINES]:
                if later["message"].startswith("END RequestId"):
                    break
                if later.get("logStreamName") == stream:
                    rest.append(later["message"].rstrip())
            text = "\n".join([text.rstrip(), *rest])
        out.append((event["timestamp"], text[:LINE_CHARS]))
    return out
