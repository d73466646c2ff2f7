"""One HyCloud instance: storage (S3, EFS, DynamoDB), the controller API and the relay workflow.

With several regions it is the home instance: its controller is also told of the data instances
of the other regions (`data_instances`, design: docs/GEO.md).
"""

from collections.abc import Sequence
from pathlib import Path

from aws_cdk import CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from hycloud_core import constants as c

from ..constructs.api_to_controller import ApiToController
from ..constructs.bundle_jobs import BundleJobs
from ..constructs.coded_repair import CodedRepair
from ..constructs.core_layer import CoreLayer
from ..constructs.data_stores import DataStores
from ..constructs.efs_volume import MOUNT_PATH, EfsVolume
from ..constructs.job_dispatcher import JobDispatcher, scheduling_env
from ..constructs.python_function import python_function
from ..constructs.reach import Reach
from ..constructs.sfn_from_asl import SfnFromAsl
from ..constructs.standby_replication import StandbyReplication
from ..constructs.tree_jobs import TreeJobs
from ..constructs.warm_functions import warm_target
from ..constructs.web_app import WebApp
from ..nag_suppressions import suppress_accepted_findings
from ..regions import DataInstanceNames, any_data_bucket, in_account, instances_env
from ..standby import StandbyNames


def quota_defaults(ctx) -> dict[str, str]:
    """Per-user quota defaults from context (`hycloud:quotaBytes`, `hycloud:quotaFiles`); unset: unlimited."""
    keys = ((c.ENV_QUOTA_BYTES, "hycloud:quotaBytes"), (c.ENV_QUOTA_FILES, "hycloud:quotaFiles"))
    return {name: str(int(ctx(key))) for name, key in keys if ctx(key) is not None}


FAIR_USE_CONTEXT = {  # per-user limits and measurement bounds (hycloud_core.control.limits, store.measurements)
    "hycloud:userRatePerS": "HYCLOUD_USER_RATE_PER_S",
    "hycloud:userBurst": "HYCLOUD_USER_BURST",
    "hycloud:userMaxJobs": "HYCLOUD_USER_MAX_JOBS",
    "hycloud:maxLinkBps": "HYCLOUD_MAX_LINK_BPS",
    "hycloud:minMeasureS": "HYCLOUD_MIN_MEASURE_S",
}


class InstanceStack(Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        functions_dir: Path,
        statemachines_dir: Path,
        layer_dir: Path,
        data_instances: Sequence[DataInstanceNames] = (),
        standby: StandbyNames | None = None,
        **kwargs,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        ctx = self.node.try_get_context
        removal = RemovalPolicy.DESTROY if ctx("hycloud:removalPolicy") == "destroy" else RemovalPolicy.RETAIN
        layer = CoreLayer(self, "Core", layer_dir=layer_dir).layer
        stream = dynamodb.StreamViewType.NEW_AND_OLD_IMAGES if standby else None  # docs/FAILOVER.md
        stores = DataStores(self, "Stores", removal_policy=removal, stream=stream)
        reach = Reach(self, "Reach", code_dir=functions_dir / "reach", layer=layer).function
        volume = EfsVolume(self, "Efs", removal_policy=removal, reach=reach)
        env = {
            c.ENV_BUCKET: stores.bucket.bucket_name,
            c.ENV_TABLE: stores.table.table_name,
            c.ENV_EFS_ROOT: MOUNT_PATH,
            c.ENV_SMALL_FILE_THRESHOLD: str(ctx("hycloud:smallFileThreshold") or 2 * c.MiB),
            c.ENV_RELAY_CACHE_BYTES: str(ctx("hycloud:relayCacheBytes") or c.GiB),
            **quota_defaults(ctx),
            **{env: str(ctx(key)) for key, env in FAIR_USE_CONTEXT.items() if ctx(key) is not None},
            **scheduling_env(self),
        }

        relay_fn = python_function(
            self,
            "RelayFetch",
            code_dir=functions_dir / "relay",
            layer=layer,
            environment=env,
            timeout_s=900,
            memory_mb=1769,
            **volume.mount(),
        )
        stores.bucket.grant_read(relay_fn)
        stores.table.grant_write_data(relay_fn)  # the relay's own run counters (cost.relay_meter)
        warm = int(ctx("hycloud:provisionedConcurrency") or 0)
        relay_job_fn = warm_target(relay_fn, warm)  # every job and direct call goes to the warm alias
        relay = SfnFromAsl(
            self,
            "Relay",
            asl_file=statemachines_dir / "relay_fetch.asl.json",
            substitutions={"RelayFetchFunctionArn": relay_job_fn.function_arn},
        ).state_machine
        relay_job_fn.grant_invoke(relay)

        delta_fn = python_function(
            self,
            "Delta",
            code_dir=functions_dir / "delta",
            layer=layer,
            environment=env,
            timeout_s=900,
            memory_mb=3008,
            **volume.mount(),
        )
        stores.bucket.grant_read_write(delta_fn)
        stores.table.grant_read_write_data(delta_fn)
        delta_job_fn = warm_target(delta_fn, warm)
        delta = SfnFromAsl(
            self,
            "DeltaJob",
            asl_file=statemachines_dir / "delta_job.asl.json",
            substitutions={
                "RelayFetchFunctionArn": relay_job_fn.function_arn,
                "DeltaFunctionArn": delta_job_fn.function_arn,
            },
        ).state_machine
        relay_job_fn.grant_invoke(delta)
        delta_job_fn.grant_invoke(delta)

        tree = TreeJobs(
            self,
            "TreeJob",
            functions_dir=functions_dir,
            statemachines_dir=statemachines_dir,
            layer=layer,
            environment=env,
            table=stores.table,
            mount=volume.mount(),
        )

        bundles = BundleJobs(
            self,
            "BundleJob",
            functions_dir=functions_dir,
            statemachines_dir=statemachines_dir,
            layer=layer,
            environment=env,
            table=stores.table,
            bucket=stores.bucket,
            mount=volume.mount(),
        )

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
        cheap = events.RuleTargetInput.from_object({"walk": False})  # eviction and staging only
        events.Rule(
            self,
            "CacheUpkeepSchedule",
            schedule=events.Schedule.rate(Duration.minutes(5)),
            targets=[targets.LambdaFunction(upkeep, event=cheap)],
        )
        events.Rule(  # repair, recount, purge and collection read every namespace: hourly
            self,
            "NamespaceUpkeepSchedule",
            schedule=events.Schedule.rate(Duration.hours(1)),
            targets=[targets.LambdaFunction(upkeep)],
        )

        controller = python_function(
            self,
            "Controller",
            code_dir=functions_dir / "controller",
            layer=layer,
            environment={
                **env,
                c.ENV_RELAY_STATE_MACHINE: relay.state_machine_arn,
                c.ENV_DELTA_STATE_MACHINE: delta.state_machine_arn,
                c.ENV_DELTA_FUNCTION: delta_job_fn.function_arn,  # short jobs run direct
                c.ENV_TREE_STATE_MACHINE: tree.state_machine.state_machine_arn,
                c.ENV_BUNDLE_STATE_MACHINE: bundles.state_machine.state_machine_arn,
                **(
                    {c.ENV_TREE_INLINE_LIMIT: str(limit)} if (limit := ctx("hycloud:treeInlineLimit")) else {}
                ),
                **({c.ENV_RELAY_RANGE_BYTES: str(n)} if (n := ctx("hycloud:relayRangeBytes")) else {}),
                **(
                    {c.ENV_DELTA_PRECOMPUTE_BYTES: str(n)}
                    if (n := ctx("hycloud:deltaPrecomputeBytes")) is not None
                    else {}
                ),
            },
            **volume.mount(),
        )
        stores.table.grant_read_write_data(controller)
        stores.bucket.grant_read_write(controller)
        relay.grant_start_execution(controller)
        relay.grant_read(controller)
        delta.grant_start_execution(controller)
        delta_job_fn.grant_invoke(controller)
        delta.grant_read(controller)
        tree.allow_control(controller)
        bundles.allow_control(controller)
        stores.table.grant_read_write_data(upkeep)
        stores.bucket.grant_read(upkeep)  # the collector lists objects to find orphans
        stores.bucket.grant_delete(upkeep)
        upkeep.add_to_role_policy(  # pending uploads of deleted users (fs/user_purge.py)
            iam.PolicyStatement(
                actions=["s3:AbortMultipartUpload"], resources=[stores.bucket.arn_for_objects("objects/*")]
            )
        )
        repair = None
        if data_instances:
            self._know_data_instances(controller, list(data_instances))
            self._read_data_blocks(relay_fn, delta_fn)
            repair = self._repair_jobs(
                controller, list(data_instances), functions_dir, statemachines_dir, layer, env, stores, volume
            )
        dispatcher = JobDispatcher(
            self,
            "Dispatcher",
            code_dir=functions_dir / "dispatcher",
            layer=layer,
            environment=env,
            table=stores.table,
            machines=[relay, delta, tree.state_machine, bundles.state_machine],
            machine_arns=(repair.machine_arn,) if repair else (),
        )
        if data_instances:  # it starts and frees the workers of jobs at data instances too
            self._allow_data_jobs(dispatcher.function, list(data_instances))
        if repair:  # the operator's whole-instance repairs and migrations are queued through it
            repair.allow_control(dispatcher.function)
            dispatcher.function.add_environment(c.ENV_REPAIR_STATE_MACHINE, repair.machine_arn)
            CfnOutput(self, "DispatcherFunctionName", value=dispatcher.function.function_name)
        if standby:  # docs/FAILOVER.md
            replication = StandbyReplication(
                self,
                "Standby",
                standby=standby,
                functions_dir=functions_dir,
                layer=layer,
                environment=env,
                table=stores.table,
                bucket=stores.bucket,
                mount=volume.mount(),
            )
            CfnOutput(self, "ReplicatorFunctionName", value=replication.function.function_name)
            CfnOutput(self, "StreamReplicatorFunctionName", value=replication.stream_function.function_name)
        api = ApiToController(self, "Api", controller=controller).api
        web = WebApp(
            self,
            "Web",
            web_dir=functions_dir.parent / "web",
            publisher_dir=functions_dir / "web_publish",
            api=api,
            layer=layer,
        )

        for name, value in {
            "ApiUrl": api.url,
            "BucketName": stores.bucket.bucket_name,
            "TableName": stores.table.table_name,
            "RelayStateMachineArn": relay.state_machine_arn,
            "DeltaStateMachineArn": delta.state_machine_arn,
            "TreeJobStateMachineArn": tree.state_machine.state_machine_arn,
            "BundleJobStateMachineArn": bundles.state_machine.state_machine_arn,
            "TreeStepFunctionName": tree.step_function.function_name,
            "ControllerFunctionName": controller.function_name,
            "AccessPointId": volume.access_point.access_point_id,
            "FileSystemId": volume.file_system.file_system_id,
            "CacheUpkeepFunctionName": upkeep.function_name,
            "WebBucketName": web.bucket.bucket_name,
            "WebPublishFunctionName": web.publisher.function_name,
            **({"WebUrl": web.url} if web.url else {}),
        }.items():
            CfnOutput(self, name, value=value)
        suppress_accepted_findings(self)

    def _read_data_blocks(self, *fns: lambda_.Function) -> None:
        """Relay and delta rebuild coded files from blocks of every region. ListBucket lets S3 answer
        a missing block 404 (absent, rebuilt from the others: fs/blocks.py) instead of 403."""
        bucket = f"arn:{self.partition}:s3:::{any_data_bucket(self.stack_name, self.account)}"
        mine = in_account(self.account)
        for fn in fns:
            fn.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["s3:GetObject"], resources=[f"{bucket}/blocks/*"], conditions=mine
                )
            )
            fn.add_to_role_policy(
                iam.PolicyStatement(actions=["s3:ListBucket"], resources=[bucket], conditions=mine)
            )

    def _repair_jobs(
        self,
        controller: lambda_.Function,
        instances: list[DataInstanceNames],
        functions_dir: Path,
        statemachines_dir: Path,
        layer: lambda_.ILayerVersion,
        env: dict[str, str],
        stores: DataStores,
        volume: EfsVolume,
    ) -> CodedRepair:
        """Repair of coded files across the instances: a job the controller queues (docs/GEO.md)."""
        repair = CodedRepair(
            self,
            "CodedRepair",
            functions_dir=functions_dir,
            statemachines_dir=statemachines_dir,
            layer=layer,
            environment={**env, c.ENV_INSTANCES: instances_env(self, instances)},
            table=stores.table,
            home_bucket=stores.bucket,
            data_buckets=[
                *(item.bucket for item in instances),
                any_data_bucket(self.stack_name, self.account),
            ],
            mount=volume.mount(),
        )
        repair.allow_control(controller)
        controller.add_environment(c.ENV_REPAIR_STATE_MACHINE, repair.machine_arn)
        CfnOutput(self, "RepairStateMachineArn", value=repair.machine_arn)
        CfnOutput(self, "RepairStepFunctionName", value=repair.step_function.function_name)
        return repair

    def _know_data_instances(self, controller: lambda_.Function, instances: list[DataInstanceNames]) -> None:
        """Tell the controller where the other regions' instances are and let it use them."""
        controller.add_environment(c.ENV_INSTANCES, instances_env(self, instances))
        names = [*(item.bucket for item in instances), any_data_bucket(self.stack_name, self.account)]
        buckets = [f"arn:{self.partition}:s3:::{name}" for name in names]
        controller.add_to_role_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject*", "s3:PutObject", "s3:DeleteObject*", "s3:AbortMultipartUpload"],
                resources=[f"{arn}/*" for arn in buckets],
                conditions=in_account(self.account),
            )
        )
        controller.add_to_role_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket*"], resources=buckets, conditions=in_account(self.account)
            )
        )
        self._allow_data_jobs(controller, instances)
        CfnOutput(self, "DataInstanceRegions", value=",".join(item.region for item in instances))

    def _allow_data_jobs(self, grantee: lambda_.Function, instances: list[DataInstanceNames]) -> None:
        """Start and follow the data instances' relay and delta jobs (a coded file's, at the user's
        optimal instance: docs/GEO.md)."""
        machines = [
            item.state_machine_arn(self, name)
            for item in instances
            for name in (item.relay_state_machine, item.delta_state_machine)
        ]
        executions = [arn.replace(":stateMachine:", ":execution:") + ":*" for arn in machines]
        grantee.add_to_role_policy(iam.PolicyStatement(actions=["states:StartExecution"], resources=machines))
        grantee.add_to_role_policy(
            iam.PolicyStatement(
                actions=["states:DescribeExecution", "states:StopExecution"], resources=executions
            )
        )
