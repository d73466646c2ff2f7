"""Tree jobs: the step function (EFS-mounted) and the workflow that loops it (statemachines/tree_job)."""

from pathlib import Path
from typing import Any

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from .python_function import python_function
from .sfn_from_asl import SfnFromAsl

STEP_TIMEOUT_S = 120  # a step works for HYCLOUD_TREE_STEP_S (20 s) and then saves its cursor


class TreeJobs(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        functions_dir: Path,
        statemachines_dir: Path,
        layer: lambda_.ILayerVersion,
        environment: dict[str, str],
        table: dynamodb.ITable,
        mount: dict[str, Any],
    ) -> None:
        super().__init__(scope, id)
        self.step_function = python_function(
            self,
            "Step",
            code_dir=functions_dir / "tree",
            layer=layer,
            environment=environment,
            timeout_s=STEP_TIMEOUT_S,
            memory_mb=1024,
            **mount,
        )
        table.grant_read_write_data(self.step_function)  # records, leases, object touches: no S3
        self.state_machine = SfnFromAsl(
            self,
            "Workflow",
            asl_file=statemachines_dir / "tree_job.asl.json",
            substitutions={"TreeStepFunctionArn": self.step_function.function_arn},
        ).state_machine
        self.step_function.grant_invoke(self.state_machine)

    def allow_control(self, grantee: lambda_.IFunction) -> None:
        """Let the controller start executions and read their status."""
        self.state_machine.grant_start_execution(grantee)
        self.state_machine.grant_read(grantee)
