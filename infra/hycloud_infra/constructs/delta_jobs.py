"""Delta jobs: the EFS-mounted function that encodes a delta download or applies a delta upload,
and the workflow that has the relay fetch the files first (statemachines/delta_job.asl.json).

The controller runs a short job by invoking the function directly and a long one through the
workflow. As with `RelayJobs`, its resources are children of its scope (Delta, DeltaLogs,
DeltaJob), where they were before this construct existed, so their logical ids stay those deployed.
"""

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hycloud_core import constants as c

from .job_assets import JobAssets
from .warm_functions import warm_target


class DeltaJobs(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        assets: JobAssets,
        *,
        relay: lambda_.IFunction,
        bucket: s3.IBucket,
        table: dynamodb.ITable | None,
        warm: int = 0,
        state_machine_name: str | None = None,
    ) -> None:
        """`relay`: the function the workflow relays the base version with (RelayJobs.job_function);
        `table`: the records the function updates, None where there is none (a data instance)."""
        super().__init__(scope, id)
        self.function = assets.function(scope, "Delta", code="delta", timeout_s=900, memory_mb=3008)
        bucket.grant_read_write(self.function)
        if table is not None:
            table.grant_read_write_data(self.function)
        self.job_function = warm_target(self.function, warm)
        self.state_machine = assets.workflow(
            scope,
            "DeltaJob",
            asl="delta_job.asl.json",
            invokes={"RelayFetchFunctionArn": relay, "DeltaFunctionArn": self.job_function},
            state_machine_name=state_machine_name,
        )

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
