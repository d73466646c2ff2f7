"""Tree jobs: the step function (EFS-mounted) and the workflow that loops it (statemachines/tree_job)."""

from pathlib import Path
from typing import Any

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from .mounted_job import MountedJob

STEP_TIMEOUT_S = 120  # a step works for HYCLOUD_TREE_STEP_S (20 s) and then saves its cursor


class TreeJobs(MountedJob):
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
        super().__init__(  # the table only: records, leases, object touches; no S3
            scope,
            id,
            function_id="Step",
            code_dir=functions_dir / "tree",
            asl_file=statemachines_dir / "tree_job.asl.json",
            function_arn_key="TreeStepFunctionArn",
            layer=layer,
            environment=environment,
            table=table,
            mount=mount,
            timeout_s=STEP_TIMEOUT_S,
        )
        self.step_function = self.function
