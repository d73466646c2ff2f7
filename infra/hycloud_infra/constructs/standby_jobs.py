"""Relay and delta jobs on the standby controller (docs/FAILOVER.md): the same functions and
state machines as the home instance's, on the standby's own bucket, table and EFS, so a client
that failed over still gets relay downloads and delta transfers, queued and dispatched as at home
(the standby stack has its own dispatcher); no coded-file relays (their blocks are in the data
instances).
"""

from pathlib import Path

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hycloud_core import constants as c

from .python_function import python_function
from .sfn_from_asl import SfnFromAsl


class StandbyJobs(Construct):
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
        mount: dict,
    ) -> None:
        super().__init__(scope, id)
        relay_fn = python_function(
            self,
            "RelayFetch",
            code_dir=functions_dir / "relay",
            layer=layer,
            environment=environment,
            timeout_s=900,
            memory_mb=1769,
            **mount,
        )
        delta_fn = python_function(
            self,
            "Delta",
            code_dir=functions_dir / "delta",
            layer=layer,
            environment=environment,
            timeout_s=900,
            memory_mb=3008,
            **mount,
        )
        self.relay = SfnFromAsl(
            self,
            "Relay",
            asl_file=statemachines_dir / "relay_fetch.asl.json",
            substitutions={"RelayFetchFunctionArn": relay_fn.function_arn},
        ).state_machine
        self.delta = SfnFromAsl(
            self,
            "DeltaJob",
            asl_file=statemachines_dir / "delta_job.asl.json",
            substitutions={
                "RelayFetchFunctionArn": relay_fn.function_arn,
                "DeltaFunctionArn": delta_fn.function_arn,
            },
        ).state_machine
        bucket.grant_read(relay_fn)
        table.grant_write_data(relay_fn)
        bucket.grant_read_write(delta_fn)
        table.grant_read_write_data(delta_fn)
        relay_fn.grant_invoke(self.relay)
        relay_fn.grant_invoke(self.delta)
        delta_fn.grant_invoke(self.delta)
        self.delta_fn = delta_fn

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
