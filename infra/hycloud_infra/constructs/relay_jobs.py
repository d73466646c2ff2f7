"""Relay jobs: the EFS-mounted function that copies a large file's object (or decodes a coded
file's blocks) into the EFS relay cache, and the workflow that runs it, over byte ranges when
the file is large (statemachines/relay_fetch.asl.json).

Its resources are children of its scope (RelayFetch, RelayFetchLogs, Relay), where they were
before this construct existed: CDK derives logical ids, and names such as a function's security
group description, from construct paths, so a deployed stack updates in place (a changed id
would replace the function and its workflow, a changed description the security group).
"""

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hycloud_core import constants as c

from .job_assets import JobAssets
from .warm_functions import warm_target


class RelayJobs(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        assets: JobAssets,
        *,
        bucket: s3.IBucket,
        table: dynamodb.ITable | None,
        warm: int = 0,
        state_machine_name: str | None = None,
    ) -> None:
        """`table`: where the relay meters its runs (cost.relay_meter), None where that table is
        another region's (a data instance grants it itself); `warm`: provisioned concurrency."""
        super().__init__(scope, id)
        self.function = assets.function(scope, "RelayFetch", code="relay", timeout_s=900, memory_mb=1769)
        bucket.grant_read(self.function)
        if table is not None:
            table.grant_write_data(self.function)
        self.job_function = warm_target(self.function, warm)  # every job and direct call goes to it
        self.state_machine = assets.workflow(
            scope,
            "Relay",
            asl="relay_fetch.asl.json",
            invokes={"RelayFetchFunctionArn": self.job_function},
            state_machine_name=state_machine_name,
        )

    def controller_env(self) -> dict[str, str]:
        return {c.ENV_RELAY_STATE_MACHINE: self.state_machine.state_machine_arn}

    def allow_control(self, grantee: lambda_.IFunction) -> None:
        """Let the controller start relays and follow them."""
        self.state_machine.grant_start_execution(grantee)
        self.state_machine.grant_read(grantee)
