"""A state machine whose definition is an ASL file from statemachines/, with ${Name} placeholders."""

import re
from pathlib import Path

from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


def placeholders(asl_file: Path) -> set[str]:
    return set(PLACEHOLDER.findall(asl_file.read_text()))


class SfnFromAsl(Construct):
    def __init__(self, scope: Construct, id: str, *, asl_file: Path, substitutions: dict[str, str]) -> None:
        super().__init__(scope, id)
        missing = placeholders(asl_file) - substitutions.keys()
        if missing:
            raise ValueError(f"{asl_file.name}: no value for {sorted(missing)}")
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            definition_body=sfn.DefinitionBody.from_file(str(asl_file)),
            definition_substitutions=substitutions,
        )
