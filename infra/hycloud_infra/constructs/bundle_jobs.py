"""Bundle jobs: the function (EFS-mounted) that commits a bundle staged in S3, and its workflow.

The controller queues a staged bundle's commit in the FOP queue; a dispatch pass starts the
workflow (statemachines/bundle_commit.asl.json) when a worker is free (docs/SCHEDULING.md).
"""

from pathlib import Path
from typing import Any

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct

from .python_function import python_function
from .sfn_from_asl import SfnFromAsl


class BundleJobs(Construct):
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
        bucket: s3.IBucket,
        mount: dict[str, Any],
    ) -> None:
        super().__init__(scope, id)
        self.function = python_function(
            self,
            "Commit",
            code_dir=functions_dir / "bundle",
            layer=layer,
            environment=environment,
            timeout_s=300,
            memory_mb=1024,  # a staged bundle inflates to 32 MiB at most
            **mount,
        )
        table.grant_read_write_data(self.function)  # leases, records, quota, Merkle nodes
        bucket.grant_read(self.function, "staging/*")
        bucket.grant_delete(self.function, "staging/*")
        self.state_machine = SfnFromAsl(
            self,
            "Workflow",
            asl_file=statemachines_dir / "bundle_commit.asl.json",
            substitutions={"BundleFunctionArn": self.function.function_arn},
        ).state_machine
        self.function.grant_invoke(self.state_machine)

    def allow_control(self, grantee: lambda_.IFunction) -> None:
        """Let the controller start executions and read their status."""
        self.state_machine.grant_start_execution(grantee)
        self.state_machine.grant_read(grantee)
