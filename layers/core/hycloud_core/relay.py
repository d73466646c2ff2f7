"""Naming shared by the controller and the relay and delta workflows."""

from __future__ import annotations

import hashlib
import time


def execution_name(cache_name: str, content_hash: str, retry: bool = False) -> str:
    """Step Functions execution name (≤ 80 chars of [A-Za-z0-9-_]) for one relay job.

    Deterministic, so submitting the same job twice starts one execution; a retry after a
    failure or an eviction gets a fresh, time-stamped name.
    """
    key = hashlib.sha256(f"{cache_name}\0{content_hash}".encode()).hexdigest()[:40]
    return f"relay-{key}" + (f"-{int(time.time() * 1000)}" if retry else "")


def execution_arn(state_machine_arn: str, name: str) -> str:
    """ARN of the execution `name` of a state machine, known before it starts (for status look-ups)."""
    return state_machine_arn.replace(":stateMachine:", ":execution:") + f":{name}"
