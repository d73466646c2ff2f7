"""Delta jobs: the EFS-mounted function that encodes a delta download or applies a delta upload,
and the workflow that has the relay fetch the files first (statemachines/delta_job.asl.json).

The controller runs a short job by invoking the function directly and a long one through the
workflow. As with `RelayJobs`, its resources are children of its scope (Delta, DeltaLogs,
DeltaJob), where they were before this construct existed, so their logical ids stay those deployed.
"""

from pathlib import Path
from typing import Any

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hycloud_core import constants as c

from .python_function import python_function
from .sfn_from_asl import SfnFromAsl
from .warm_functions import warm_target


class DeltaJobs(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        functions_dir: Path,
        statemachines_dir: Path,
        layer: lambda_.ILayerVersion,
        environment: dict[str, str],
        relay: lambda_.IFunction,
        bucket: s3.IBucket,
        table: dynamodb.ITable | None,
        mount: dict[str, Any],
        warm: int = 0,
        state_machine_name: str | None = None,
    ) -> None:
        """`relay`: the function the workflow relays the base version with (RelayJobs.job_function);
        `table`: the records the function updates, None where there is none (a data instance)."""
        super().__init__(scope, id)
        self.function = python_function(
            scope,
            "Delta",
            code_dir=functions_dir / "delta",
            layer=layer,
            environment=environment,
            timeout_s=900,
            memory_mb=3008,
            **mount,
        )
        bucket.grant_read_write(self.function)
        if table is not None:
            table.grant_read_write_data(self.function)
        self.job_function = warm_target(self.function, warm)
        self.state_machine = SfnFromAsl(
            scope,
            "DeltaJob",
            asl_file=statemachines_dir / "delta_job.asl.json",
            substitutions={
                "RelayFetchFunctionArn": relay.function_arn,
                "DeltaFunctionArn": self.job_function.function_arn,
            },
            state_machine_name=state_machine_name,
        ).state_machine
        relay.grant_invoke(self.state_machine)
        self.job_function.grant_invoke(self.state_machine)

    def controller_env(self) -> dict[str, str]:
        return {
            c.ENV_DELTA_STATE_MACHINE: self.state_machine.state_machine_arn,
            c.ENV_DELTA_FUNCTION: self.job_function.function_arn,  # short jobs run direct
        }

    def allow_control(self, grantee: lambda_.IFunction) -> None:
        """Let the controller start jobs, run short ones itself and follow them."""
        self.state_machine.grant_start_execution(grantee)
        self.job_function.grant_invoke(grantee)
        self.state_machine.grant_read(grantee)
