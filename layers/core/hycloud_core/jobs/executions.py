"""Step Functions executions of any instance's state machines, by ARN.

A job may run at a data instance in another region (a coded file's relay or delta at the user's
optimal instance, docs/GEO.md); an execution is reached through the Step Functions endpoint of
its state machine's region, which the ARN names (`arn:aws:states:<region>:...`), from a function
in the VPC through the reach function (reach.py).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from .. import reach


def execution_arn(state_machine_arn: str, name: str) -> str:
    """ARN of the execution `name` of a state machine, known before it starts (for status look-ups)."""
    return state_machine_arn.replace(":stateMachine:", ":execution:") + f":{name}"


def region_of(arn: str) -> str | None:
    """The region an ARN names (its fourth field), None when it names none."""
    parts = arn.split(":")
    return parts[3] or None if len(parts) > 3 else None


@cache
def _client(region: str | None) -> Any:
    return reach.client("stepfunctions", region)


def client_for(machine: str) -> Any:
    return _client(region_of(machine))


def start(machine: str, name: str, payload: str) -> None:
    """Start execution `name`; one already started under that name (a concurrent pass) is it."""
    sfn = client_for(machine)
    try:
        sfn.start_execution(stateMachineArn=machine, name=name, input=payload)
    except sfn.exceptions.ExecutionAlreadyExists:
        pass


def describe(machine: str, name: str) -> dict[str, Any] | None:
    """The execution as Step Functions describes it; None when it does not exist."""
    sfn = client_for(machine)
    try:
        described: dict[str, Any] = sfn.describe_execution(executionArn=execution_arn(machine, name))
        return described
    except sfn.exceptions.ExecutionDoesNotExist:
        return None


def status(machine: str, name: str) -> str:
    """RUNNING, SUCCEEDED, FAILED, ... or ABSENT when the execution does not exist."""
    found = describe(machine, name)
    return found["status"] if found else "ABSENT"
