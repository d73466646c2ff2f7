"""What every job construct is built from: the function code and ASL folders, the core layer, the
environment its functions share and the EFS mount; and the two steps they all take with it, an
EFS-mounted function of a `functions/` folder and a workflow of a `statemachines/` file.

One value instead of the same five arguments to each construct (relay, delta, tree, bundle,
repair, standby jobs and replication); where a construct puts its resources (its own scope, or
its parent's to keep deployed logical ids) stays the construct's choice.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from .python_function import python_function
from .sfn_from_asl import SfnFromAsl


@dataclass(frozen=True)
class JobAssets:
    functions_dir: Path
    statemachines_dir: Path
    layer: lambda_.ILayerVersion
    environment: dict[str, str]
    mount: dict[str, Any]  # EfsVolume.mount()

    def with_environment(self, extra: dict[str, str]) -> JobAssets:
        """The same assets, the functions told `extra` as well."""
        return dataclasses.replace(self, environment={**self.environment, **extra})

    def function(
        self,
        scope: Construct,
        id: str,
        *,
        code: str,
        timeout_s: int,
        memory_mb: int = 1024,
        environment: dict[str, str] | None = None,
    ) -> lambda_.Function:
        """The function of functions/`code`, with the volume mounted; `environment`: instead of
        the shared one."""
        return python_function(
            scope,
            id,
            code_dir=self.functions_dir / code,
            layer=self.layer,
            environment=self.environment if environment is None else environment,
            timeout_s=timeout_s,
            memory_mb=memory_mb,
            **self.mount,
        )

    def workflow(
        self,
        scope: Construct,
        id: str,
        *,
        asl: str,
        invokes: dict[str, lambda_.IFunction],
        state_machine_name: str | None = None,
    ) -> sfn.StateMachine:
        """The state machine of statemachines/`asl`: each placeholder of `invokes` is that
        function's ARN, and the machine may invoke it."""
        machine = SfnFromAsl(
            scope,
            id,
            asl_file=self.statemachines_dir / asl,
            substitutions={key: fn.function_arn for key, fn in invokes.items()},
            state_machine_name=state_machine_name,
        ).state_machine
        for fn in invokes.values():
            fn.grant_invoke(machine)
        return machine
