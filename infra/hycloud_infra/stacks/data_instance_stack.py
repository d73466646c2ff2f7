"""A data instance in another region: content bucket, EFS relay cache, relay and delta jobs, cache upkeep.

The controller, the API, the table and the users' namespaces stay in the home instance stack;
this stack holds what a region adds (design: docs/GEO.md). Its bucket and state machines carry the
physical names of `regions.DataInstanceNames`, which is how the home controller finds them.
"""

from pathlib import Path

from aws_cdk import CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from constructs import Construct

from hycloud_core import constants as c

from ..constructs.core_layer import CoreLayer
from ..constructs.data_stores import content_bucket
from ..constructs.efs_volume import MOUNT_PATH, EfsVolume
from ..constructs.python_function import python_function
from ..constructs.sfn_from_asl import SfnFromAsl
from ..nag_suppressions import suppress_accepted_findings
from ..regions import DataInstanceNames, any_data_bucket


class DataInstanceStack(Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        functions_dir: Path,
        statemachines_dir: Path,
        layer_dir: Path,
        home_stack_name: str,
        home_region: str,
        **kwargs,
    ) -> None:
        """`home_stack_name`, `home_region`: where the home stack's table and bucket are, which the
        jobs run here for the user's optimal instance read and meter into (docs/GEO.md)."""
        super().__init__(scope, id, **kwargs)
        ctx = self.node.try_get_context
        removal = RemovalPolicy.DESTROY if ctx("hycloud:removalPolicy") == "destroy" else RemovalPolicy.RETAIN
        self.names = DataInstanceNames.of(self.stack_name, self.region, self.account)
        layer = CoreLayer(self, "Core", layer_dir=layer_dir).layer
        bucket = content_bucket(self, removal_policy=removal, bucket_name=self.names.bucket)
        volume = EfsVolume(self, "Efs", removal_policy=removal)
        env = {
            c.ENV_BUCKET: bucket.bucket_name,
            c.ENV_EFS_ROOT: MOUNT_PATH,
            c.ENV_SMALL_FILE_THRESHOLD: str(ctx("hycloud:smallFileThreshold") or 2 * c.MiB),
            c.ENV_RELAY_CACHE_BYTES: str(ctx("hycloud:relayCacheBytes") or c.GiB),
        }
        jobs = dict(layer=layer, environment=env, timeout_s=900, **volume.mount())
        relay_fn = python_function(
            self, "RelayFetch", code_dir=functions_dir / "relay", memory_mb=1769, **jobs
        )
        delta_fn = python_function(self, "Delta", code_dir=functions_dir / "delta", memory_mb=3008, **jobs)
        bucket.grant_read(relay_fn)
        bucket.grant_read_write(delta_fn)
        relay = SfnFromAsl(
            self,
            "Relay",
            asl_file=statemachines_dir / "relay_fetch.asl.json",
            substitutions={"RelayFetchFunctionArn": relay_fn.function_arn},
            state_machine_name=self.names.relay_state_machine,
        ).state_machine
        relay_fn.grant_invoke(relay)
        delta = SfnFromAsl(
            self,
            "DeltaJob",
            asl_file=statemachines_dir / "delta_job.asl.json",
            substitutions={
                "RelayFetchFunctionArn": relay_fn.function_arn,
                "DeltaFunctionArn": delta_fn.function_arn,
            },
            state_machine_name=self.names.delta_state_machine,
        ).state_machine
        relay_fn.grant_invoke(delta)
        delta_fn.grant_invoke(delta)
        bucket.grant_put(relay_fn)  # the file made whole for the client (relay/)
        self._reach_home(relay_fn, delta_fn, home_stack_name, home_region)

        upkeep = python_function(
            self,
            "CacheUpkeep",
            code_dir=functions_dir / "maintenance",
            layer=layer,
            environment=env,
            timeout_s=300,
            memory_mb=512,
            **volume.mount(),
        )
        bucket.grant_read(upkeep)
        events.Rule(  # this region's relay cache and staging only; namespace walks run at home
            self,
            "CacheUpkeepSchedule",
            schedule=events.Schedule.rate(Duration.minutes(5)),
            targets=[
                targets.LambdaFunction(upkeep, event=events.RuleTargetInput.from_object({"walk": False}))
            ],
        )

        self._outputs(bucket, relay, delta, relay_fn, upkeep, volume)
        suppress_accepted_findings(self)

    def _reach_home(self, relay_fn, delta_fn, home_stack_name: str, home_region: str) -> None:
        """Coded files are rebuilt from blocks of every instance; a plain base version is read
        from the home bucket; runs are metered in the home table. The home resources' names are
        generated under the home stack's name, hence the patterns."""
        home = home_stack_name.lower()
        blocks = [
            f"arn:{self.partition}:s3:::{any_data_bucket(home_stack_name, self.account)}/blocks/*",
            f"arn:{self.partition}:s3:::{home}-*/blocks/*",
        ]
        for fn in (relay_fn, delta_fn):
            fn.add_to_role_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=blocks))
        relay_fn.add_to_role_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject"], resources=[f"arn:{self.partition}:s3:::{home}-*/objects/*"]
            )
        )
        table = self.format_arn(
            service="dynamodb", region=home_region, resource="table", resource_name=f"{home_stack_name}-*"
        )
        relay_fn.add_to_role_policy(
            iam.PolicyStatement(
                actions=["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"], resources=[table]
            )
        )

    def _outputs(self, bucket, relay, delta, relay_fn, upkeep, volume) -> None:
        for name, value in {
            "Region": self.region,
            "BucketName": bucket.bucket_name,
            "RelayStateMachineArn": relay.state_machine_arn,
            "DeltaStateMachineArn": delta.state_machine_arn,
            "RelayFetchFunctionName": relay_fn.function_name,
            "CacheUpkeepFunctionName": upkeep.function_name,
            "AccessPointId": volume.access_point.access_point_id,
            "FileSystemId": volume.file_system.file_system_id,
        }.items():
            CfnOutput(self, name, value=value)
