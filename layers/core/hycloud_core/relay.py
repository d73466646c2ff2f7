"""Naming shared by the controller and the relay and delta workflows."""

from __future__ import annotations

from .jobs import job_key


def relay_job_key(cache_name: str, content_hash: str) -> str:
    """Key of the relay job filling one cache entry with one version (the version the path holds)."""
    return job_key("relay", cache_name, content_hash)


def execution_arn(state_machine_arn: str, name: str) -> str:
    """ARN of the execution `name` of a state machine, known before it starts (for status look-ups)."""
    return state_machine_arn.replace(":stateMachine:", ":execution:") + f":{name}"
