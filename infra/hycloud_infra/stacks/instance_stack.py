"""One HyCloud instance: storage (S3, EFS, DynamoDB), the controller API and the jobs it runs
(relay, delta, tree, bundle), each kind a construct of constructs/.

With several regions it is the home instance: its controller is also told of the data instances
of the other regions (`data_instances`, design: docs/GEO.md).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import CfnOutput, Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from hycloud_core import constants as c

from ..constructs.api_to_controller import ApiToController
from ..constructs.bundle_jobs import BundleJobs
from ..constructs.coded_repair import CodedRepair
from ..constructs.core_layer import CoreLayer
from ..constructs.data_stores import DataStores
from ..constructs.delta_jobs import DeltaJobs
from ..constructs.efs_volume import MOUNT_PATH, EfsVolume
from ..constructs.job_assets import JobAssets
from ..constructs.job_dispatcher import JobDispatcher, scheduling_env
from ..constructs.python_function import python_function
from ..constructs.relay_jobs import RelayJobs
from ..constructs.segments import Segments
from ..constructs.standby_replication import StandbyReplication
from ..constructs.tree_jobs import TreeJobs
from ..constructs.web_app import WebApp
from ..nag_suppressions import suppress_accepted_findings
from ..regions import DataInstanceNames, any_data_bucket, in_account, instances_env
from ..standby import StandbyNames
from .groundwork import reached_volume, removal_policy, small_file_env


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


def instance_env(scope: Construct, stores: DataStores) -> dict[str, str]:
    """The environment every function of the instance shares: its stores and the context's settings."""
    ctx = scope.node.try_get_context
    return {
        c.ENV_BUCKET: stores.bucket.bucket_name,
        c.ENV_TABLE: stores.table.table_name,
        c.ENV_EFS_ROOT: MOUNT_PATH,
        **small_file_env(ctx),
        c.ENV_RELAY_CACHE_BYTES: str(ctx("hycloud:relayCacheBytes") or c.GiB),
        **(
            {c.ENV_VERSION_RETENTION_S: str(int(kept_s))}
            if (kept_s := ctx("hycloud:versionRetentionS")) is not None
            else {}
        ),
        **(
            {c.ENV_TRASH_RETENTION_S: str(int(trash_s))}
            if (trash_s := ctx("hycloud:trashRetentionS")) is not None
            else {}
        ),
        **quota_defaults(ctx),
        **{env: str(ctx(key)) for key, env in FAIR_USE_CONTEXT.items() if ctx(key) is not None},
        **scheduling_env(scope),
    }


def controller_settings(ctx) -> dict[str, str]:
    """The controller's own tuning from context, each only when set."""
    return {
        **({c.ENV_TREE_INLINE_LIMIT: str(limit)} if (limit := ctx("hycloud:treeInlineLimit")) else {}),
        **({c.ENV_RELAY_RANGE_BYTES: str(n)} if (n := ctx("hycloud:relayRangeBytes")) else {}),
        **({c.ENV_CODED_INLINE_BYTES: str(n)} if (n := ctx("hycloud:codedInlineBytes")) else {}),
        **(
            {c.ENV_DELTA_PRECOMPUTE_BYTES: str(n)}
            if (n := ctx("hycloud:deltaPrecomputeBytes")) is not None
            else {}
        ),
    }


@dataclass(frozen=True)
class Base:
    """What the instance's functions are built on: code, layer, shared environment and the volume
    mounted (`assets`), the stores, the volume."""

    assets: JobAssets
    stores: DataStores
    volume: EfsVolume


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
        removal = removal_policy(ctx)
        layer = CoreLayer(self, "Core", layer_dir=layer_dir).layer
        stream = dynamodb.StreamViewType.NEW_AND_OLD_IMAGES if standby else None  # docs/FAILOVER.md
        stores = DataStores(self, "Stores", removal_policy=removal, stream=stream)
        volume = reached_volume(self, functions_dir=functions_dir, layer=layer, removal=removal)
        assets = JobAssets(
            functions_dir, statemachines_dir, layer, instance_env(self, stores), volume.mount()
        )
        base = Base(assets, stores, volume)
        warm = int(ctx("hycloud:provisionedConcurrency") or 0)
        table, bucket = stores.table, stores.bucket
        relay = RelayJobs(self, "RelayJobs", assets, table=table, bucket=bucket, warm=warm)
        delta = DeltaJobs(
            self, "DeltaJobs", assets, table=table, bucket=bucket, warm=warm, relay=relay.job_function
        )
        tree = TreeJobs(self, "TreeJob", assets, table=table)
        bundles = BundleJobs(self, "BundleJob", assets, table=table, bucket=bucket)
        upkeep = self._upkeep(base)
        Segments(self, "Segments", upkeep=upkeep, bucket=bucket).allow_reads(tree.function, bundles.function)
        controller = self._controller(base, relay, delta, tree, bundles)
        repair = self._reach_data_instances(base, list(data_instances), controller, relay, delta)
        machines = [relay.state_machine, delta.state_machine, tree.state_machine, bundles.state_machine]
        self._dispatcher(base, machines, list(data_instances), repair)
        if standby:  # docs/FAILOVER.md
            self._replicate(base, standby)
        self._serve(
            base,
            controller,
            {
                "RelayStateMachineArn": relay.state_machine.state_machine_arn,
                "DeltaStateMachineArn": delta.state_machine.state_machine_arn,
                "TreeJobStateMachineArn": tree.state_machine.state_machine_arn,
                "BundleJobStateMachineArn": bundles.state_machine.state_machine_arn,
                "TreeStepFunctionName": tree.step_function.function_name,
                "ControllerFunctionName": controller.function_name,
                "CacheUpkeepFunctionName": upkeep.function_name,
            },
        )
        suppress_accepted_findings(self)

    def _controller(
        self, base: Base, relay: RelayJobs, delta: DeltaJobs, tree: TreeJobs, bundles: BundleJobs
    ) -> lambda_.Function:
        """The controller behind the API: the records, the content, and the jobs it starts."""
        controller = python_function(
            self,
            "Controller",
            code_dir=base.assets.functions_dir / "controller",
            layer=base.assets.layer,
            environment={
                **base.assets.environment,
                **relay.controller_env(),
                **delta.controller_env(),
                c.ENV_TREE_STATE_MACHINE: tree.state_machine.state_machine_arn,
                c.ENV_BUNDLE_STATE_MACHINE: bundles.state_machine.state_machine_arn,
                **controller_settings(self.node.try_get_context),
            },
            **base.assets.mount,
        )
        base.stores.table.grant_read_write_data(controller)
        base.stores.bucket.grant_read_write(controller)
        for jobs in (relay, delta, tree, bundles):
            jobs.allow_control(controller)
        return controller

    def _serve(self, base: Base, controller: lambda_.Function, outputs: dict[str, str]) -> None:
        """The API to the controller and the web app, and the stack's outputs (`outputs` and the
        stores', volume's, API's and web app's)."""
        api = ApiToController(self, "Api", controller=controller).api
        web = WebApp(
            self,
            "Web",
            web_dir=base.assets.functions_dir.parent / "web",
            publisher_dir=base.assets.functions_dir / "web_publish",
            api=api,
            layer=base.assets.layer,
        )
        for name, value in {
            "ApiUrl": api.url,
            "BucketName": base.stores.bucket.bucket_name,
            "TableName": base.stores.table.table_name,
            **outputs,
            "AccessPointId": base.volume.access_point.access_point_id,
            "FileSystemId": base.volume.file_system.file_system_id,
            "WebBucketName": web.bucket.bucket_name,
            "WebPublishFunctionName": web.publisher.function_name,
            **({"WebUrl": web.url} if web.url else {}),
        }.items():
            CfnOutput(self, name, value=value)

    def _upkeep(self, base: Base) -> lambda_.Function:
        """Cache upkeep: eviction and staging every 5 minutes; repair, recount, purge and collection,
        which read every namespace, hourly."""
        upkeep = base.assets.function(self, "CacheUpkeep", code="maintenance", timeout_s=300, memory_mb=512)
        cheap = events.RuleTargetInput.from_object({"walk": False})  # eviction and staging only
        events.Rule(
            self,
            "CacheUpkeepSchedule",
            schedule=events.Schedule.rate(Duration.minutes(5)),
            targets=[targets.LambdaFunction(upkeep, event=cheap)],
        )
        events.Rule(
            self,
            "NamespaceUpkeepSchedule",
            schedule=events.Schedule.rate(Duration.hours(1)),
            targets=[targets.LambdaFunction(upkeep)],
        )
        base.stores.table.grant_read_write_data(upkeep)
        base.stores.bucket.grant_read(upkeep)  # the collector lists objects to find orphans
        base.stores.bucket.grant_delete(upkeep)
        base.stores.bucket.grant_put(upkeep, "objects/*")  # files moved across the threshold to S3
        upkeep.add_to_role_policy(  # pending uploads of deleted users (fs/user_purge.py)
            iam.PolicyStatement(
                actions=["s3:AbortMultipartUpload"],
                resources=[base.stores.bucket.arn_for_objects("objects/*")],
            )
        )
        return upkeep

    def _reach_data_instances(
        self,
        base: Base,
        instances: list[DataInstanceNames],
        controller: lambda_.Function,
        relay: RelayJobs,
        delta: DeltaJobs,
    ) -> CodedRepair | None:
        """With data instances: the controller uses them, relay and delta read their blocks, and
        coded files are repaired across them (the repair jobs, returned)."""
        if not instances:
            return None
        self._know_data_instances(controller, instances)
        self._read_data_blocks(relay.function, delta.function)
        return self._repair_jobs(controller, instances, base)

    def _dispatcher(
        self,
        base: Base,
        machines: list[sfn.IStateMachine],
        instances: list[DataInstanceNames],
        repair: CodedRepair | None,
    ) -> None:
        """The job dispatcher: it frees a worker when a job of `machines` ends and starts the next."""
        dispatcher = JobDispatcher(
            self,
            "Dispatcher",
            code_dir=base.assets.functions_dir / "dispatcher",
            layer=base.assets.layer,
            environment=base.assets.environment,
            table=base.stores.table,
            machines=machines,
            machine_arns=(repair.machine_arn,) if repair else (),
        )
        if instances:  # it starts and frees the workers of jobs at data instances too
            self._allow_data_jobs(dispatcher.function, instances)
        if repair:  # the operator's whole-instance repairs and migrations are queued through it
            repair.allow_control(dispatcher.function)
            dispatcher.function.add_environment(c.ENV_REPAIR_STATE_MACHINE, repair.machine_arn)
            CfnOutput(self, "DispatcherFunctionName", value=dispatcher.function.function_name)

    def _replicate(self, base: Base, standby: StandbyNames) -> None:
        """Replication of the records and content into the standby (docs/FAILOVER.md)."""
        replication = StandbyReplication(
            self,
            "Standby",
            base.assets,
            standby=standby,
            table=base.stores.table,
            bucket=base.stores.bucket,
        )
        CfnOutput(self, "ReplicatorFunctionName", value=replication.function.function_name)
        CfnOutput(self, "StreamReplicatorFunctionName", value=replication.stream_function.function_name)

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
        self, controller: lambda_.Function, instances: list[DataInstanceNames], base: Base
    ) -> CodedRepair:
        """Repair of coded files across the instances: a job the controller queues (docs/GEO.md)."""
        repair = CodedRepair(
            self,
            "CodedRepair",
            base.assets.with_environment({c.ENV_INSTANCES: instances_env(self, instances)}),
            table=base.stores.table,
            home_bucket=base.stores.bucket,
            data_buckets=[
                *(item.bucket for item in instances),
                any_data_bucket(self.stack_name, self.account),
            ],
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
