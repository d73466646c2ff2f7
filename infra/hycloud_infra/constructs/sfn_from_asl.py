"""A state machine whose definition is an ASL file from statemachines/, with ${Name} placeholders."""

import re
from pathlib import Path

from aws_cdk import RemovalPolicy
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from .python_function import log_retention, tracing_on

PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


def placeholders(asl_file: Path) -> set[str]:
    return set(PLACEHOLDER.findall(asl_file.read_text()))


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
        super().__init__(scope, id)
        missing = placeholders(asl_file) - substitutions.keys()
        if missing:
            raise ValueError(f"{asl_file.name}: no value for {sorted(missing)}")
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_name=state_machine_name,
            definition_body=sfn.DefinitionBody.from_file(str(asl_file)),
            definition_substitutions=substitutions,
            tracing_enabled=tracing_on(self),
            logs=sfn.LogOptions(  # every state's input and output, for a failed job's post-mortem
                destination=logs.LogGroup(
                    self, "Logs", retention=log_retention(self), removal_policy=RemovalPolicy.DESTROY
                ),
                level=sfn.LogLevel.ALL,
            ),
        )
