"""A job kind: its EFS-mounted function, with the records table, and the workflow that runs it.

Tree jobs (constructs/tree_jobs.py) and bundle jobs (constructs/bundle_jobs.py) are this shape;
the dispatcher starts their workflows from the FOP queue (docs/SCHEDULING.md).
"""

from pathlib import Path
from typing import Any

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from .python_function import python_function
from .sfn_from_asl import SfnFromAsl


class MountedJob(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        function_id: str,
        code_dir: Path,
        asl_file: Path,
        function_arn_key: str,
        layer: lambda_.ILayerVersion,
        environment: dict[str, str],
        table: dynamodb.ITable,
        mount: dict[str, Any],
        timeout_s: int,
    ) -> None:
        super().__init__(scope, id)
        self.function = python_function(
            self,
            function_id,
            code_dir=code_dir,
            layer=layer,
            environment=environment,
            timeout_s=timeout_s,
            memory_mb=1024,
            **mount,
        )
        table.grant_read_write_data(self.function)  # records, leases, quota, Merkle nodes
        self.state_machine = SfnFromAsl(
            self, "Workflow", asl_file=asl_file, substitutions={function_arn_key: self.function.function_arn}
        ).state_machine
        self.function.grant_invoke(self.state_machine)

    def allow_control(self, grantee: lambda_.IFunction) -> None:
        """Let the controller start executions and read their status."""
        self.state_machine.grant_start_execution(grantee)
        self.state_machine.grant_read(grantee)
