"""Relay and delta jobs on the standby controller (docs/FAILOVER.md): the same functions and
state machines as the home instance's (constructs/relay_jobs.py, delta_jobs.py), on the standby's own bucket, table and EFS, so a client
that failed over still gets relay downloads and delta transfers, queued and dispatched as at home
(the standby stack has its own dispatcher); no coded-file relays (their blocks are in the data
instances).
"""

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hycloud_core import constants as c

from .delta_jobs import DeltaJobs
from .job_assets import JobAssets
from .relay_jobs import RelayJobs


class StandbyJobs(Construct):
    def __init__(
        self, scope: Construct, id: str, assets: JobAssets, *, table: dynamodb.ITable, bucket: s3.IBucket
    ) -> None:
        super().__init__(scope, id)
        relay = RelayJobs(self, "RelayJobs", assets, bucket=bucket, table=table)
        delta = DeltaJobs(self, "DeltaJobs", assets, bucket=bucket, table=table, relay=relay.function)
        self.relay, self.delta, self.delta_fn = relay.state_machine, delta.state_machine, delta.function

    def controller_env(self) -> dict[str, str]:
        return {
            c.ENV_RELAY_STATE_MACHINE: self.relay.state_machine_arn,
            c.ENV_DELTA_STATE_MACHINE: self.delta.state_machine_arn,
            c.ENV_DELTA_FUNCTION: self.delta_fn.function_arn,
        }

    def allow(self, controller: lambda_.IFunction) -> None:
        for machine in (self.relay, self.delta):
            machine.grant_start_execution(controller)
            machine.grant_read(controller)
        self.delta_fn.grant_invoke(controller)
