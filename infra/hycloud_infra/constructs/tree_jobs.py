"""Tree jobs: the step function (EFS-mounted) and the workflow that loops it (statemachines/tree_job)."""

from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from .job_assets import JobAssets
from .mounted_job import MountedJob

STEP_TIMEOUT_S = 120  # a step works for HYCLOUD_TREE_STEP_S (20 s) and then saves its cursor


class TreeJobs(MountedJob):
    def __init__(self, scope: Construct, id: str, assets: JobAssets, *, table: dynamodb.ITable) -> None:
        super().__init__(  # the table only: records, leases, object touches; no S3
            scope,
            id,
            assets,
            function_id="Step",
            code="tree",
            asl="tree_job.asl.json",
            function_arn_key="TreeStepFunctionArn",
            table=table,
            timeout_s=STEP_TIMEOUT_S,
        )
        self.step_function = self.function
