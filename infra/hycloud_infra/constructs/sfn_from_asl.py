"""A state machine whose definition is an ASL file from statemachines/, with ${Name} placeholders."""

import json
import re
from pathlib import Path

from aws_cdk import RemovalPolicy
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ..concurrency import job_budget
from .python_function import log_retention, tracing_on

PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


def placeholders(asl_file: Path) -> set[str]:
    return set(PLACEHOLDER.findall(asl_file.read_text()))


def definition(asl_file: Path, map_concurrency: int | None) -> sfn.DefinitionBody:
    """The file as it is (an asset), or with its top-level Map states capped at `map_concurrency`."""
    asl = json.loads(asl_file.read_text())
    maps = [state for state in asl["States"].values() if state["Type"] == "Map"]
    if map_concurrency is None or all(m.get("MaxConcurrency", 0) == map_concurrency for m in maps):
        return sfn.DefinitionBody.from_file(str(asl_file))
    for state in maps:
        limit = state.get("MaxConcurrency", 0)  # 0: no limit
        state["MaxConcurrency"] = min(limit, map_concurrency) if limit else map_concurrency
    return sfn.DefinitionBody.from_string(json.dumps(asl, indent=2))


class SfnFromAsl(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        asl_file: Path,
        substitutions: dict[str, str],
        state_machine_name: str | None = None,
    ) -> None:
        """Map states run at most as many iterations at once as the account's Lambda concurrency
        leaves a job (concurrency.py); a lower cap than the file's inlines the definition."""
        super().__init__(scope, id)
        missing = placeholders(asl_file) - substitutions.keys()
        if missing:
            raise ValueError(f"{asl_file.name}: no value for {sorted(missing)}")
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_name=state_machine_name,
            definition_body=definition(asl_file, job_budget(self).map_concurrency),
            definition_substitutions=substitutions,
            tracing_enabled=tracing_on(self),
            logs=sfn.LogOptions(  # every state's input and output, for a failed job's post-mortem
                destination=logs.LogGroup(
                    self, "Logs", retention=log_retention(self), removal_policy=RemovalPolicy.DESTROY
                ),
                level=sfn.LogLevel.ALL,
            ),
        )
