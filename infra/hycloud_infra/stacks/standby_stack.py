"""The standby controller in another region: its own API URL, controller, table, bucket and EFS,
and the function that applies what the primary's replication job sends (docs/FAILOVER.md).

Its table, bucket and apply function carry the physical names of `standby.StandbyNames`, which is
how the job in the home region reaches them. It runs relay and delta jobs of its own
(constructs/standby_jobs.py) but no tree jobs (moves and copies run inline) and no coded files.
"""

from pathlib import Path

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from hycloud_core import constants as c
from hycloud_core.standby.status import ENV_ROLE

from ..constructs.api_to_controller import ApiToController
from ..constructs.core_layer import CoreLayer
from ..constructs.data_stores import content_bucket, records_table
from ..constructs.efs_volume import MOUNT_PATH
from ..constructs.job_assets import JobAssets
from ..constructs.job_dispatcher import JobDispatcher, scheduling_env
from ..constructs.python_function import python_function
from ..constructs.standby_jobs import StandbyJobs
from ..nag_suppressions import suppress_accepted_findings
from ..standby import StandbyNames
from .groundwork import reached_volume, removal_policy, small_file_env


class StandbyStack(Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        functions_dir: Path,
        layer_dir: Path,
        statemachines_dir: Path | None = None,
        **kwargs,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        ctx = self.node.try_get_context
        removal = removal_policy(ctx)
        self.names = StandbyNames.of(self.stack_name, self.region, self.account)
        layer = CoreLayer(self, "Core", layer_dir=layer_dir).layer
        table = records_table(self, removal_policy=removal, table_name=self.names.table)
        bucket = content_bucket(self, removal_policy=removal, bucket_name=self.names.bucket)
        volume = reached_volume(self, functions_dir=functions_dir, layer=layer, removal=removal)
        env = {
            c.ENV_BUCKET: bucket.bucket_name,
            c.ENV_TABLE: table.table_name,
            c.ENV_EFS_ROOT: MOUNT_PATH,
            **small_file_env(ctx),
            c.ENV_TREE_INLINE_LIMIT: str(1_000_000),  # no tree jobs here: moves and copies run inline
            ENV_ROLE: "standby",
            **scheduling_env(self),
        }
        statemachines_dir = statemachines_dir or functions_dir.parent / "statemachines"
        assets = JobAssets(functions_dir, statemachines_dir, layer, env, volume.mount())
        jobs = StandbyJobs(self, "Jobs", assets, table=table, bucket=bucket)
        controller = python_function(
            self,
            "Controller",
            code_dir=functions_dir / "controller",
            layer=layer,
            environment={**env, **jobs.controller_env()},
            **volume.mount(),
        )
        jobs.allow(controller)
        JobDispatcher(  # frees a worker when its job ends and starts the next, as at home
            self,
            "Dispatcher",
            code_dir=functions_dir / "dispatcher",
            layer=layer,
            environment=env,
            table=table,
            machines=[jobs.relay, jobs.delta],
        )
        apply = python_function(
            self,
            "Apply",
            code_dir=functions_dir / "standby_apply",
            layer=layer,
            environment=env,
            timeout_s=300,
            function_name=self.names.apply_function,
            **volume.mount(),
        )
        for fn in (controller, apply):
            table.grant_read_write_data(fn)
            bucket.grant_read_write(fn)
        api = ApiToController(self, "Api", controller=controller).api
        for name, value in {
            "StandbyApiUrl": api.url,
            "StandbyTableName": table.table_name,
            "StandbyBucketName": bucket.bucket_name,
            "StandbyApplyFunctionName": apply.function_name,
            "StandbyAccessPointId": volume.access_point.access_point_id,
            "StandbyRegion": self.region,
        }.items():
            CfnOutput(self, name, value=value)
        suppress_accepted_findings(self)
